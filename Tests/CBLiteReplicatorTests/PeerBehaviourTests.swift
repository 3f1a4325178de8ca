import CBLiteCore
import CBLiteListener
@testable import CBLiteReplicator
import Glibc
import XCTest

/// Peers that misbehave or hold what this engine cannot store, TLS, restarts, and the
/// push's pending documents.
final class PeerBehaviourTests: ReplicatorTestCase {
    /// A CouchDB-like source with two documents, one of which has a duplicate key (CouchDB
    /// accepts that; this engine does not): the good one arrives, the bad one is that
    /// document's error, the replication ends without error and its checkpoint moves on.
    func testADocumentThisEngineRefusesIsReportedAloneAndTheRestArrives() throws {
        let good = #"{"_id":"good","_rev":"1-aaaa","_revisions":{"start":1,"ids":["aaaa"]},"v":1}"#
        let bad = #"{"_id":"bad","_rev":"1-bbbb","_revisions":{"start":1,"ids":["bbbb"]},"v":1,"v":2}"#
        let local = FakeLocalDocuments()
        let peer = try FakePeer { method, target, body, _ in
            let path = target.split(separator: "?").first.map(String.init) ?? target
            switch (method, path) {
            case ("GET", "/db/"): return FakePeer.response(200, #"{"db_name":"db","update_seq":"2-x"}"#)
            case (_, _) where path.hasPrefix("/db/_local/"): return local.answer(method, path, body)
            case ("GET", "/db/_changes"):
                if target.contains("since=%222-x%22") || target.contains("since=2-x") { return FakePeer.response(200, #"{"results":[],"last_seq":"2-x"}"#) }
                return FakePeer.response(200, #"{"results":[{"seq":"1-x","id":"good","changes":[{"rev":"1-aaaa"}]},{"seq":"2-x","id":"bad","changes":[{"rev":"1-bbbb"}]}],"last_seq":"2-x"}"#)
            case ("POST", "/db/_bulk_get"):
                return FakePeer.response(200, #"{"results":[{"id":"good","docs":[{"ok":"# + good + #"}]},{"id":"bad","docs":[{"ok":"# + bad + #"}]}]}"#)
            case ("GET", "/db/good"): return FakePeer.response(200, "[{\"ok\":\(good)}]")
            case ("GET", "/db/bad"):
                let b = "xyz"
                let part = "--\(b)\r\nContent-Type: application/json\r\n\r\n\(bad)\r\n--\(b)--"
                return FakePeer.response(200, part, contentType: "multipart/mixed; boundary=\"\(b)\"")
            default: return FakePeer.response(404, #"{"error":"not_found","reason":"missing"}"#)
            }
        }
        defer { peer.stop() }
        let events = LockedValue<[DocumentReplication]>([])
        let s = try replicate("\"direction\":\"pull\"", url: peer.url, events: events)
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(s.documentsPulled, 1)
        XCTAssertEqual(s.documentFailures, 1)
        XCTAssertEqual(try body(localColl, "good")["v"], .int(1))
        let failures = events.withLock { $0.filter { $0.error != nil } }
        XCTAssertEqual(failures.map(\.docID), ["bad"])
        XCTAssertTrue(failures.first?.error?.message.contains("duplicate") == true, "\(failures)")
        // The checkpoint moved past it: a second run asks from "2-x" and finds nothing new,
        // but tries "bad" again by name (FailedRevisionTests), which fails the same way.
        let again = try replicate("\"direction\":\"pull\"", url: peer.url)
        XCTAssertEqual(again.total, 0)
        XCTAssertEqual(again.documentFailures, 1)
        XCTAssertNil(again.errorMessage)
    }

    func testAPeerThatAnswersGarbageStopsTheReplicationWithAnErrorNotACrash() throws {
        for garbage in ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nnope!", "SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n[1,2,3,4,5]\n"] {
            let peer = try FakePeer { _, target, _, _ in
                if target.hasPrefix("/db/_changes") || target == "/db/" { return Array(garbage.utf8) }
                return FakePeer.response(404, #"{"error":"not_found","reason":"missing"}"#)
            }
            defer { peer.stop() }
            let s = try replicate("\"direction\":\"pull\",\"max_retries\":1,\"timeout_ms\":2000", url: peer.url)
            XCTAssertEqual(s.activity, .stopped)
            XCTAssertNotNil(s.errorMessage, garbage)
        }
    }

    func testAPeerThatHangsUpMidAnswerIsRetriedThenRecovers() throws {
        try serve()
        for i in 1...5 { try put(remoteColl, "d\(i)", "{}") }
        // A proxy that drops the first two _changes requests on the floor.
        let drops = LockedValue(0)
        let port = listener.port
        let peer = try FakePeer { method, target, body, headers in
            if target.contains("_changes") && drops.withLock({ $0 += 1; return $0 <= 2 }) { return nil }
            return PeerBehaviourTests.forward(method, target, body, headers, port: port)
        }
        defer { peer.stop() }
        let s = try replicate("\"direction\":\"pull\",\"max_retries\":5", url: "http://127.0.0.1:\(peer.port)/remote")
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(s.documentsPulled, 5)
        XCTAssertGreaterThanOrEqual(drops.withLock { $0 }, 3)
    }

    func testContinuousReplicationGoesOfflineAndComesBackWhenThePeerRestarts() throws {
        try serve()
        let port = listener.port
        let r = try makeReplicator("\"continuous\":true,\"heartbeat_ms\":1000,\"retry_max_ms\":300")
        try r.start()
        defer { r.stop() }
        try put(localColl, "before", "{}")
        waitFor("the first document pushed") { (try? remoteColl.get(docID: "before")) != nil }
        listener.stop()
        waitFor("offline") { r.status.activity == .offline }
        XCTAssertNotNil(r.status.errorMessage)
        try put(localColl, "while-down", "{}")
        // The same port again, as a restarted peer would be.
        listener = try Listener(configuration: "{\"port\":\(port)}")
        try listener.start()
        try listener.serve(name: "remote", database: remote)
        waitFor("the document written while the peer was down", timeoutMs: 15_000) { (try? remoteColl.get(docID: "while-down")) != nil }
        waitFor("back to idle without error") { r.status.activity == .idle && r.status.errorMessage == nil }
    }

    func testTLSWithAPinnedCertificateAndAWrongPinRefused() throws {
        try serve("\"tls\":{\"anonymous\":true,\"identity_directory\":\"\(directory)\"}")
        let pin = try XCTUnwrap(listener.tlsCertificateSHA256)
        try put(localColl, "secret", "{}")
        let url = "https://127.0.0.1:\(listener.port)/remote"
        let ok = try replicate("\"direction\":\"push\",\"tls\":{\"pinned_sha256\":\"\(pin)\"}", url: url)
        XCTAssertNil(ok.errorMessage)
        XCTAssertEqual(ok.documentsPushed, 1)
        let wrong = String(pin.reversed())
        let refused = try replicate("\"direction\":\"push\",\"max_retries\":0,\"tls\":{\"pinned_sha256\":\"\(wrong)\"}", url: url)
        XCTAssertNotNil(refused.errorMessage)
        // Without a pin the self-signed identity is not trusted either.
        let unpinned = try replicate("\"direction\":\"push\",\"max_retries\":0", url: url)
        XCTAssertNotNil(unpinned.errorMessage)
    }

    func testPendingDocumentsAreThoseThePushHasNotSent() throws {
        try serve()
        try put(localColl, "a", "{}")
        try put(localColl, "b", "{}")
        let r = try makeReplicator("\"direction\":\"push\"")
        XCTAssertEqual(try r.pendingDocumentIDs(), ["a", "b"])
        XCTAssertTrue(try r.isDocumentPending("a"))
        try r.start()
        XCTAssertTrue(r.waitUntilStopped(timeoutMs: 30_000))
        XCTAssertEqual(try r.pendingDocumentIDs(), [])
        try put(localColl, "c", "{}")
        XCTAssertEqual(try r.pendingDocumentIDs(), ["c"])
        XCTAssertFalse(try r.isDocumentPending("a"))
        let pullOnly = try makeReplicator("\"direction\":\"pull\"")
        XCTAssertThrowsError(try pullOnly.pendingDocumentIDs())
    }

    func testBadConfigurationsAreClearErrors() {
        for bad in ["{}", #"{"url":"ftp://x/db"}"#, #"{"url":"http://x"}"#, #"{"url":"http://x:99999/db"}"#, #"{"url":"http://x/db","direction":"sideways"}"#,
                    #"{"url":"http://x/db","bogus":1}"#, #"{"url":"http://x/db","tls":{"pinned_sha256":"00"}}"#,
                    #"{"url":"http://x/db","headers":{"X-A":"a\r\nInjected: 1"}}"#, #"{"url":"http://x/db","batch_size":0}"#,
                    #"{"url":"http://x/db","auth":{"type":"bearer"}}"#, #"{"url":"http://x/db","doc_ids":[1]}"#] {
            XCTAssertThrowsError(try ReplicatorConfiguration(json: bad), bad) { e in
                XCTAssertEqual((e as? CBLError)?.status, .badRequest, bad)
            }
        }
        let c = try? ReplicatorConfiguration(json: #"{"url":"https://al%40ice:p%3Ass@[::1]:6984/a/b%2Fc/"}"#)
        XCTAssertEqual(c?.remote.user, "al@ice")
        XCTAssertEqual(c?.remote.password, "p:ss")
        XCTAssertEqual(c?.remote.host, "::1")
        XCTAssertEqual(c?.remote.databasePath, "/a/b%2Fc")
        XCTAssertEqual(c?.remote.redacted, "https://[::1]:6984/a/b%2Fc")
        XCTAssertEqual(c?.remote.serverPath, "/a")
    }

    /// Forwards one request to the listener (a blocking client on a fresh socket).
    static func forward(_ method: String, _ target: String, _ body: [UInt8], _ headers: [String: String], port: Int) -> [UInt8]? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        guard withUnsafePointer(to: &addr, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }) == 0 else { return nil }
        let request = Array("\(method) \(target) HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: \(headers["content-type"] ?? "application/json")\r\nAccept: \(headers["accept"] ?? "application/json")\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { break }
            out += chunk[0..<n]
        }
        // Re-frame as Content-Length so the fake peer's connection can stay open.
        guard let headEnd = (0..<max(0, out.count - 3)).first(where: { out[$0] == 13 && out[$0 + 1] == 10 && out[$0 + 2] == 13 && out[$0 + 3] == 10 }) else { return nil }
        let head = String(decoding: out[0..<headEnd], as: UTF8.self)
        var body = Array(out[(headEnd + 4)...])
        if head.lowercased().contains("transfer-encoding: chunked") { body = dechunk(body) }
        let status = head.split(separator: " ").dropFirst().first.map(String.init) ?? "500"
        let type = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-type:") }.map { String($0.dropFirst(13).trimmingSpaces) } ?? "application/json"
        return FakePeer.response(Int(status) ?? 500, body, contentType: type)
    }

    static func dechunk(_ b: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < b.count {
            var j = i
            while j + 1 < b.count && !(b[j] == 13 && b[j + 1] == 10) { j += 1 }
            let size = Int(String(decoding: b[i..<j], as: UTF8.self).split(separator: ";").first ?? "0", radix: 16) ?? 0
            if size == 0 { break }
            out += b[(j + 2)..<min(b.count, j + 2 + size)]
            i = j + 2 + size + 2
        }
        return out
    }
}

/// What travels: only attachments the peer lacks, and empty ones too.
final class AttachmentTrafficTests: ReplicatorTestCase {
    func testAnUpdatedDocumentSendsOnlyItsNewAttachmentAndEmptyOnesSurvive() throws {
        try serve()
        let port = listener.port
        let proxy = try FakePeer { m, t, b, h in PeerBehaviourTests.forward(m, t, b, h, port: port) }
        defer { proxy.stop() }
        let url = "http://127.0.0.1:\(proxy.port)/remote"
        let big = [UInt8](repeating: 7, count: 2 << 20)
        let r1 = try localColl.setAttachment(docID: "doc", parent: nil, name: "big.bin", contentType: "application/octet-stream", bytes: big)
        let r2 = try localColl.setAttachment(docID: "doc", parent: r1, name: "empty.txt", contentType: "text/plain", bytes: [])
        let s1 = try replicate("\"direction\":\"push\"", url: url)
        XCTAssertNil(s1.errorMessage)
        XCTAssertEqual(s1.documentFailures, 0)
        let first = proxy.requests.withLock { $0.filter { $0.method == "PUT" && $0.target.hasPrefix("/remote/doc") } }
        XCTAssertEqual(first.count, 1)
        XCTAssertGreaterThan(first.first?.body.count ?? 0, big.count)
        XCTAssertEqual(try remoteColl.attachment(docID: "doc", name: "empty.txt").length, 0)

        _ = try localColl.setAttachment(docID: "doc", parent: r2, name: "note.txt", contentType: "text/plain", bytes: Array("new".utf8))
        proxy.requests.withLock { $0.removeAll() }
        let s2 = try replicate("\"direction\":\"push\"", url: url)
        XCTAssertNil(s2.errorMessage)
        XCTAssertEqual(s2.documentFailures, 0)
        let second = proxy.requests.withLock { $0.filter { $0.method == "PUT" && $0.target.hasPrefix("/remote/doc") } }
        XCTAssertEqual(second.count, 1)
        XCTAssertLessThan(second.first?.body.count ?? Int.max, 4096, "the 2 MiB attachment the peer has must not travel again")
        XCTAssertEqual(try remoteColl.attachment(docID: "doc", name: "big.bin").length, UInt64(big.count))
        XCTAssertEqual(try leaves(remoteColl), try leaves(localColl))

        // Pulled back into a third database, with the same trick the other way: the
        // second pull fetches only the new attachment.
        let third = try Database.open(name: "third", directory: directory)
        defer { try? third.close() }
        let thirdColl = try third.defaultCollection()
        let pull = try ReplicatorConfiguration(json: "{\"url\":\"\(url)\",\"direction\":\"pull\"}")
        let p = try Replicator(collection: thirdColl, configuration: pull)
        try p.start()
        XCTAssertTrue(p.waitUntilStopped(timeoutMs: 60_000))
        XCTAssertNil(p.status.errorMessage)
        XCTAssertEqual(try thirdColl.attachment(docID: "doc", name: "empty.txt").length, 0)
        XCTAssertEqual(try thirdColl.attachment(docID: "doc", name: "big.bin").length, UInt64(big.count))
        XCTAssertEqual(try thirdColl.attachment(docID: "doc", name: "note.txt").length, 3)
    }
}
