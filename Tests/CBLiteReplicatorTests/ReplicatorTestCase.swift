import CBLiteCore
import CBLiteListener
@testable import CBLiteReplicator
import Glibc
import XCTest

/// Two real peers over a real socket: `remote` is served by a listener on 127.0.0.1,
/// `local` replicates with it.
class ReplicatorTestCase: XCTestCase {
    var directory = ""
    var listener: Listener!
    var local: Database!
    var remote: Database!
    var localColl: Collection!
    var remoteColl: Collection!

    override func setUpWithError() throws {
        var template = Array("/tmp/cblite-replicator-test-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { throw CBLError(.internalError, "mkdtemp failed") }
        directory = String(cString: p)
        local = try Database.open(name: "local", directory: directory)
        remote = try Database.open(name: "remote", directory: directory)
        localColl = try local.defaultCollection()
        remoteColl = try remote.defaultCollection()
    }

    override func tearDown() {
        listener?.stop()
        listener = nil
        try? local?.close()
        try? remote?.close()
        _ = system("rm -rf '\(directory)'")
    }

    /// Serves `remote` as "remote" (with `extra` listener configuration).
    func serve(_ extra: String = "") throws {
        listener = try Listener(configuration: "{\"port\":0\(extra.isEmpty ? "" : "," + extra)}")
        try listener.start()
        try listener.serve(name: "remote", database: remote)
    }

    var remoteURL: String { "http://127.0.0.1:\(listener.port)/remote" }

    /// Runs a one-shot replication to its end and returns its last status.
    @discardableResult
    func replicate(_ extra: String = "", url: String? = nil, events: LockedValue<[DocumentReplication]>? = nil,
                   file: StaticString = #filePath, line: UInt = #line) throws -> ReplicatorStatus {
        let r = try makeReplicator(extra, url: url, events: events)
        try r.start()
        XCTAssertTrue(r.waitUntilStopped(timeoutMs: 60_000), "replication did not end", file: file, line: line)
        r.stop()
        return r.status
    }

    func makeReplicator(_ extra: String = "", url: String? = nil, events: LockedValue<[DocumentReplication]>? = nil) throws -> Replicator {
        let config = try ReplicatorConfiguration(json: "{\"url\":\"\(url ?? remoteURL)\",\"retry_initial_ms\":50\(extra.isEmpty ? "" : "," + extra)}")
        return try Replicator(collection: localColl, configuration: config, onDocuments: events.map { ev in { docs in ev.withLock { $0 += docs } } })
    }

    @discardableResult
    func put(_ c: Collection, _ id: String, _ json: String, parent: String? = nil) throws -> String {
        try c.put(docID: id, json: json, parent: parent).revID
    }

    func body(_ c: Collection, _ id: String) throws -> JSONObject {
        let b = try c.get(docID: id)
        return try b.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
    }

    /// Every document's leaves, deleted or not, for comparing two trees.
    func leaves(_ c: Collection) throws -> [String: Set<String>] {
        var out: [String: Set<String>] = [:]
        var o = ChangesOptions()
        o.allRevs = true
        for e in try c.changes(since: 0, options: o) { out[e.docID] = Set(e.revs) }
        return out
    }

    func waitFor(_ what: String, timeoutMs: Int = 10_000, _ condition: () throws -> Bool, file: StaticString = #filePath, line: UInt = #line) rethrows {
        let deadline = MonotonicTime.now().adding(milliseconds: timeoutMs)
        while MonotonicTime.now() < deadline {
            if try condition() { return }
            usleep(20_000)
        }
        XCTFail("timed out waiting for \(what)", file: file, line: line)
    }
}
