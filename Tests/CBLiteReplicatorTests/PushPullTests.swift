import CBLiteCore
import CBLiteListener
@testable import CBLiteReplicator
import Glibc
import XCTest

final class PushPullTests: ReplicatorTestCase {
    func testPushCopiesDocumentsAndTombstonesAndASecondRunSendsNothing() throws {
        try serve()
        for i in 1...30 { try put(localColl, "d\(i)", "{\"i\":\(i)}") }
        let rev = try put(localColl, "gone", "{}")
        _ = try localColl.delete(docID: "gone", parent: rev)
        let s = try replicate("\"direction\":\"push\"")
        XCTAssertEqual(s.activity, .stopped)
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(s.documentsPushed, 31)
        XCTAssertEqual(try body(remoteColl, "d7")["i"], .int(7))
        XCTAssertEqual(try leaves(remoteColl), try leaves(localColl))
        // The checkpoint: a second run finds nothing to send.
        let again = try replicate("\"direction\":\"push\"")
        XCTAssertEqual(again.documentsPushed, 0)
        XCTAssertEqual(again.total, 0)
        // Only the new change travels after that.
        try put(localColl, "d31", "{}")
        XCTAssertEqual(try replicate("\"direction\":\"push\"").documentsPushed, 1)
    }

    func testPullCopiesDocumentsInBatches() throws {
        try serve()
        for i in 1...45 { try put(remoteColl, "r\(i)", "{\"i\":\(i)}") }
        let s = try replicate("\"direction\":\"pull\",\"batch_size\":10")
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(s.documentsPulled, 45)
        XCTAssertEqual(try leaves(localColl), try leaves(remoteColl))
        XCTAssertEqual(try replicate("\"direction\":\"pull\"").documentsPulled, 0)
    }

    /// Design documents travel like any other document, both ways, with their revisions
    /// and attachments; local documents stay where they are.
    func testDesignDocumentsReplicateBothWaysAndLocalOnesStay() throws {
        try serve()
        let ddoc = #"{"views":{"v":{"map":"function(doc){ emit(doc.k); }"}},"filters":{"f":"function(doc){ return true; }"}}"#
        let r1 = try put(remoteColl, "_design/app", ddoc)
        _ = try remoteColl.setAttachment(docID: "_design/app", parent: r1, name: "app.js", contentType: "text/javascript",
                                         bytes: Array("x()".utf8))
        _ = try remoteColl.putLocal(id: "private", json: "{}", parent: nil)
        let pulled = try replicate("\"direction\":\"pull\"")
        XCTAssertNil(pulled.errorMessage)
        XCTAssertEqual(pulled.documentFailures, 0)
        XCTAssertEqual(pulled.documentsPulled, 1)
        XCTAssertEqual(try leaves(localColl), try leaves(remoteColl))
        XCTAssertEqual(try body(localColl, "_design/app")["filters"], try body(remoteColl, "_design/app")["filters"])
        XCTAssertEqual(try localColl.attachmentContent(docID: "_design/app", name: "app.js"), Array("x()".utf8))
        XCTAssertThrowsError(try localColl.getLocal(id: "private")) { XCTAssertEqual(($0 as? CBLError)?.status, .notFound) }
        // Edited here, pushed back: the peer's tree grows by the same revision.
        try put(localColl, "_design/app", #"{"language":"javascript"}"#, parent: try body(localColl, "_design/app")["_rev"]?.stringValue)
        try put(localColl, "_design/new", "{}")
        let pushed = try replicate("\"direction\":\"push\"")
        XCTAssertNil(pushed.errorMessage)
        XCTAssertEqual(pushed.documentsPushed, 2)
        XCTAssertEqual(try leaves(remoteColl), try leaves(localColl))
        XCTAssertEqual(try body(remoteColl, "_design/app")["language"], .string("javascript"))
    }

    /// A document nested to the JSON limit travels both ways (parsed, canonicalized and
    /// written on the replicator's and the listener's threads).
    func testADocumentNestedToTheLimitReplicatesBothWays() throws {
        try serve()
        let d = JSONParser.maxDepth - 1
        let deep = #"{"a":"# + String(repeating: "[", count: d) + String(repeating: "]", count: d) + "}"
        try put(remoteColl, "deep-remote", deep)
        try put(localColl, "deep-local", deep)
        let s = try replicate()
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(s.documentFailures, 0)
        XCTAssertEqual(try leaves(localColl), try leaves(remoteColl))
        XCTAssertEqual(try localColl.get(docID: "deep-remote").count, try remoteColl.get(docID: "deep-remote").count)
    }

    func testConflictsMadeOnBothSidesEndAsOneTreeWithOneWinner() throws {
        try serve()
        let r1 = try put(localColl, "doc", "{\"v\":0}")
        try replicate("\"direction\":\"push\"")
        try put(localColl, "doc", "{\"v\":\"local\"}", parent: r1)
        try put(remoteColl, "doc", "{\"v\":\"remote\"}", parent: r1)
        let s = try replicate()
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(try leaves(localColl)["doc"]?.count, 2)
        XCTAssertEqual(try leaves(localColl), try leaves(remoteColl))
        XCTAssertEqual(try body(localColl, "doc")["_rev"], try body(remoteColl, "doc")["_rev"])
    }

    /// A conflict between CouchDB's 32-hex leaf (on the peer) and our 40-hex one (here),
    /// in a document holding integers beyond 64 bits: after a sync both sides have one
    /// tree, CouchDB's winner, and every digit.
    func testCouchDBsWinnerAndBigIntegersSurviveASyncBothWays() throws {
        try serve()
        func putExisting(_ c: Collection, _ json: String, _ history: [String]) throws {
            var text = json
            try text.withUTF8 { _ = try c.putExisting(docID: "doc", body: $0, history: history) }
        }
        let couch = "3-4dc79c95e1a2b3c4d5e6f708192a3b4c", ours = "3-748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8"
        try putExisting(remoteColl, #"{"side":"couchdb","n":18446744073709551617}"#, [couch, "2-b", "1-a"])
        try putExisting(localColl, #"{"side":"ours","n":-12345678901234567890123}"#, [ours, "2-b", "1-a"])
        let s = try replicate()
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(try leaves(localColl), try leaves(remoteColl))
        XCTAssertEqual(try body(localColl, "doc")["_rev"], .string(couch))
        XCTAssertEqual(try body(remoteColl, "doc")["_rev"], .string(couch))
        XCTAssertEqual(try body(localColl, "doc")["n"], .bigInteger("18446744073709551617"))
        let pushed = try remoteColl.get(docID: "doc", revID: ours)
        XCTAssertTrue(String(decoding: pushed, as: UTF8.self).contains(#""n":-12345678901234567890123"#))
    }

    func testAttachmentsTravelBothWaysAndOnlyNewOnesAreSentAgain() throws {
        try serve()
        var big = [UInt8](repeating: 0, count: 3 << 20)
        for i in big.indices { big[i] = UInt8(truncatingIfNeeded: i &* 2654435761 >> 13) }
        let w = try localColl.makeAttachmentWriter()
        try w.write(big)
        let info = try w.finish()
        let small = Base64.encode(Array("hello".utf8))
        try put(localColl, "a", "{\"_attachments\":{\"big.bin\":{\"content_type\":\"application/octet-stream\",\"digest\":\"\(info.digest.string)\",\"stub\":true},\"s.txt\":{\"content_type\":\"text/plain\",\"data\":\"\(small)\"}}}")
        XCTAssertNil(try replicate("\"direction\":\"push\"").errorMessage)
        let pushed = try remoteColl.revision(docID: "a", revID: nil)
        XCTAssertEqual(pushed.json.count > 0, true)
        let got = try body(remoteColl, "a")["_attachments"]?.objectValue?["big.bin"]?.objectValue
        XCTAssertEqual(got?["length"], .int(Int64(big.count)))
        XCTAssertEqual(got?["digest"], .string(info.digest.string))
        // Pull into a third database: the content arrives intact.
        let third = try Database.open(name: "third", directory: directory)
        defer { try? third.close() }
        let r = try Replicator(collection: try third.defaultCollection(),
                               configuration: try ReplicatorConfiguration(json: "{\"url\":\"\(remoteURL)\",\"direction\":\"pull\"}"))
        try r.start()
        XCTAssertTrue(r.waitUntilStopped(timeoutMs: 60_000))
        XCTAssertNil(r.status.errorMessage)
        let reader = try third.defaultCollection().openBlob(info.digest)
        var copied: [UInt8] = []
        while true { let c = try reader.read(max: 1 << 20); if c.isEmpty { break }; copied += c }
        reader.close()
        XCTAssertEqual(copied, big)
    }

    func testDocIDsAndANamedFilterSelectWhatIsPushed() throws {
        try serve()
        for i in 1...6 { try put(localColl, "d\(i)", "{\"even\":\(i % 2 == 0)}") }
        XCTAssertEqual(try replicate("\"direction\":\"push\",\"doc_ids\":[\"d1\",\"d2\"]").documentsPushed, 2)
        try local.setFilter(name: "evens") { doc, _ in
            (try? doc.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) })?["even"] == .bool(true)
        }
        let s = try replicate("\"direction\":\"push\",\"filter\":\"evens\"")
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(Set(try leaves(remoteColl).keys), ["d1", "d2", "d4", "d6"])
    }

    func testWrongPasswordIsReportedAs401AndNotRetried() throws {
        try serve("\"users\":{\"alice\":\"secret\"}")
        try put(localColl, "d", "{}")
        let s = try replicate("\"direction\":\"push\"", url: "http://alice:wrong@127.0.0.1:\(listener.port)/remote")
        XCTAssertEqual(s.activity, .stopped)
        XCTAssertEqual(s.errorStatus, 401)
        let ok = try replicate("\"direction\":\"push\"", url: "http://alice:secret@127.0.0.1:\(listener.port)/remote")
        XCTAssertNil(ok.errorMessage)
        XCTAssertEqual(ok.documentsPushed, 1)
        let session = try replicate("\"direction\":\"pull\",\"auth\":{\"type\":\"session\",\"username\":\"alice\",\"password\":\"secret\"}")
        XCTAssertNil(session.errorMessage)
    }

    func testAPeerThatIsNotThereFailsAfterItsRetries() throws {
        try serve()
        let port = listener.port
        listener.stop()
        listener = nil
        let s = try replicate("\"max_retries\":2", url: "http://127.0.0.1:\(port)/remote")
        XCTAssertEqual(s.activity, .stopped)
        XCTAssertEqual(s.errorStatus, 0)
        XCTAssertNotNil(s.errorMessage)
    }

    func testContinuousReplicationCarriesChangesBothWaysUntilStopped() throws {
        try serve()
        let r = try makeReplicator("\"continuous\":true,\"heartbeat_ms\":1000")
        try r.start()
        defer { r.stop() }
        try put(localColl, "from-local", "{}")
        try put(remoteColl, "from-remote", "{}")
        waitFor("both documents on both sides") {
            (try? leaves(localColl).count) == 2 && (try? leaves(remoteColl).count) == 2
        }
        try put(remoteColl, "later", "{}")
        waitFor("a later change pulled") { (try? localColl.get(docID: "later")) != nil }
        XCTAssertNotEqual(r.status.activity, .stopped)
        r.stop()
        XCTAssertEqual(r.status.activity, .stopped)
    }

    func testClosingTheDatabaseStopsItsReplicators() throws {
        try serve()
        let r = try makeReplicator("\"continuous\":true,\"heartbeat_ms\":1000")
        try r.start()
        waitFor("idle") { r.status.activity == .idle }
        try local.close()
        XCTAssertEqual(r.status.activity, .stopped)
        local = nil
    }
}

/// A 50 MB attachment travels both ways streamed: the process's resident memory grows by
/// much less than the attachment.
final class LargeAttachmentTests: ReplicatorTestCase {
    static func residentKiB() -> Int {
        guard let f = fopen("/proc/self/status", "r") else { return 0 }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, 256, f) != nil {
            let s = String(cString: line)
            if s.hasPrefix("VmRSS:") { return Int(s.split(separator: " ").dropFirst().first ?? "0") ?? 0 }
        }
        return 0
    }

    func testFiftyMegabytesStreamedWithBoundedMemory() throws {
        try serve()
        let size = 50 << 20
        let w = try localColl.makeAttachmentWriter()
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        for i in 0..<(size >> 20) {
            for j in stride(from: 0, to: chunk.count, by: 4096) { chunk[j] = UInt8(truncatingIfNeeded: i &+ j) }
            try w.write(chunk)
        }
        let info = try w.finish()
        try put(localColl, "big", "{\"_attachments\":{\"big.bin\":{\"content_type\":\"application/octet-stream\",\"digest\":\"\(info.digest.string)\",\"stub\":true}}}")
        let start = Self.residentKiB()
        let peak = LockedValue(start)
        let sampling = LockedValue(true)
        let sampler = try ServiceThread {
            while sampling.withLock({ $0 }) {
                let now = Self.residentKiB()
                peak.withLock { $0 = max($0, now) }
                usleep(5_000)
            }
        }
        XCTAssertNil(try replicate("\"direction\":\"push\"").errorMessage)
        let third = try Database.open(name: "third", directory: directory)
        defer { try? third.close() }
        let r = try Replicator(collection: try third.defaultCollection(),
                               configuration: try ReplicatorConfiguration(json: "{\"url\":\"\(remoteURL)\",\"direction\":\"pull\"}"))
        try r.start()
        XCTAssertTrue(r.waitUntilStopped(timeoutMs: 120_000))
        XCTAssertNil(r.status.errorMessage)
        sampling.withLock { $0 = false }
        sampler.join()
        let pulled = try third.defaultCollection().attachment(docID: "big", name: "big.bin")
        XCTAssertEqual(pulled.length, UInt64(size))
        XCTAssertEqual(pulled.digest, info.digest)
        let grew = peak.withLock { $0 } - start
        XCTAssertGreaterThan(start, 0, "VmRSS unreadable")
        print("50 MiB attachment: resident memory grew by \(grew) KiB")
        XCTAssertLessThan(grew, 25 << 10, "resident memory grew by \(grew) KiB for a 50 MiB attachment")
    }
}

final class StopFromCallbackTests: ReplicatorTestCase {
    func testStopFromTheStatusCallbackEndsTheReplication() throws {
        try serve()
        let box = LockedValue<Replicator?>(nil)
        let seen = LockedValue<[ReplicatorStatus.Activity]>([])
        let config = try ReplicatorConfiguration(json: "{\"url\":\"\(remoteURL)\",\"continuous\":true}")
        let r = try Replicator(collection: localColl, configuration: config, onStatus: { s in
            seen.withLock { $0.append(s.activity) }
            if s.activity == .idle, let me = box.withLock({ r in defer { r = nil }; return r }) { me.stop() }
        })
        box.withLock { $0 = r }
        try r.start()
        waitFor("stopped") { seen.withLock { $0.last } == .stopped }
        XCTAssertEqual(r.status.activity, .stopped)
    }
}

/// The listener's `pending` and the puller's use of it: a one-shot pull in small batches
/// from our own listener goes on until nothing is pending, and its total is known after
/// the first batch.
final class PendingTests: ReplicatorTestCase {
    func testAOneShotPullInBatchesReadsEverythingAndKnowsItsTotalEarly() throws {
        try serve()
        for i in 1...25 { try put(remoteColl, "p\(i)", "{}") }
        let totals = LockedValue<[Int64]>([])
        let config = try ReplicatorConfiguration(json: "{\"url\":\"\(remoteURL)\",\"direction\":\"pull\",\"batch_size\":10}")
        let r = try Replicator(collection: localColl, configuration: config, onStatus: { s in totals.withLock { $0.append(s.total) } })
        try r.start()
        XCTAssertTrue(r.waitUntilStopped(timeoutMs: 30_000))
        XCTAssertEqual(r.status.documentsPulled, 25)
        XCTAssertNil(r.status.errorMessage)
        // After the first batch of 10, the listener said 15 more were pending.
        XCTAssertEqual(totals.withLock { $0.first { $0 > 0 } }, 25)
    }
}
