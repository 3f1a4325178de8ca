import XCTest
import Glibc
@testable import CBLiteCore

/// A scripted workload that passes every kind of write point of the engine — documents
/// saved alone and in transactions, a deletion, attachments stored outside and inside a
/// transaction and through a streaming writer, a local document (what the replicator's
/// checkpoint is), a view index update, a WAL checkpoint, a compaction — and remembers
/// what it was told succeeded, to check afterwards that none of it was lost.
/// FaultInjectionTests runs it with a fault at each write point in turn; DiskFullTests on
/// a file system that fills up.
final class FaultWorkload {
    /// What the workload was acknowledged: each document's revision and body (nil:
    /// deleted), the attachments' bytes, the local document's revision. A write that
    /// failed must have left nothing (a failed COMMIT in WAL mode never lands: its commit
    /// frame is the last thing written), so the file holds exactly this.
    struct Ledger {
        var docs: [String: (rev: String, body: String?)] = [:]
        var attachments: [String: [UInt8]] = [:]
        var local: (rev: String, json: String)?
        /// Every failure, with the step it ended.
        var failures: [(step: String, error: CBLError)] = []

        func rev(_ id: String) -> String? { docs[id]?.rev }
    }

    let db: Database
    var ledger = Ledger()
    /// Attachment sizes are multiplied by this (DiskFullTests makes them large).
    var scale = 1

    init(_ db: Database, scale: Int = 1) {
        self.db = db
        self.scale = scale
    }

    static func content(_ size: Int, seed: UInt8) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed } }

    /// Runs `body`; a failure is recorded (any error not a CBLError is one too) and the
    /// workload goes on, as a program that reports the error and keeps running would.
    private func step(_ name: String, _ body: (inout Ledger) throws -> Void) {
        do {
            try body(&ledger)
        } catch {
            ledger.failures.append((name, CBLError.wrapping(error)))
        }
    }

    /// Every document the workload writes.
    static let documentIDs = ["a", "b", "c", "d", "e", "f", "att1", "att2", "att3", "after"]

    func put(_ c: Collection, _ id: String, _ body: String) {
        step("put \(id)") { l in
            let r = try c.put(docID: id, json: body, parent: l.rev(id))
            l.docs[id] = (r.revID, body)
        }
    }

    func run() {
        let c: Collection
        do { c = try db.defaultCollection() } catch { return ledger.failures.append(("collection", CBLError.wrapping(error))) }
        put(c, "a", #"{"n":1}"#)
        put(c, "a", #"{"n":2}"#)
        // A transaction whose caller goes on after a failed save and commits: the commit
        // must not commit part of what SQLite rolled back.
        step("transaction") { l in
            try db.begin()
            var saved: [(String, String, String)] = []
            var failure: Error?
            for id in ["b", "c", "d"] {
                // Several pages each: a small page cache spills them in mid-transaction.
                let body = #"{"id":"\#(id)","n":3,"s":"\#(String(repeating: id, count: 6000))"}"#
                do { saved.append((id, try c.put(docID: id, json: body, parent: l.rev(id)).revID, body)) } catch { failure = failure ?? error }
            }
            do { try db.commit() } catch { try? db.abort(); throw error }
            for (id, rev, body) in saved { l.docs[id] = (rev, body) }
            if let failure { throw failure }
        }
        step("delete b") { l in
            guard let parent = l.rev("b") else { return }
            l.docs["b"] = (try c.delete(docID: "b", parent: parent), nil)
        }
        step("attachment") { l in
            let bytes = FaultWorkload.content(20_000 * scale, seed: 1)
            let rev = try c.setAttachment(docID: "att1", parent: l.rev("att1"), name: "a", contentType: nil, bytes: bytes)
            l.docs["att1"] = (rev, "{}")
            l.attachments["att1"] = bytes
        }
        step("attachment in a transaction") { l in
            let bytes = FaultWorkload.content(30_000 * scale, seed: 2)
            try db.begin()
            let rev: String, e: Collection.SaveResult
            do {
                rev = try c.setAttachment(docID: "att2", parent: l.rev("att2"), name: "a", contentType: nil, bytes: bytes)
                e = try c.put(docID: "e", json: #"{"n":5}"#, parent: l.rev("e"))
                try db.commit()
            } catch { try? db.abort(); throw error }
            l.docs["att2"] = (rev, "{}")
            l.attachments["att2"] = bytes
            l.docs["e"] = (e.revID, #"{"n":5}"#)
        }
        step("streamed attachment") { l in
            let w = try db.blobStore.makeWriter()
            var all: [UInt8] = []
            for i in 0..<3 {
                let chunk = FaultWorkload.content(16_384 * scale, seed: UInt8(10 + i))
                try w.write(chunk)
                all += chunk
            }
            let info = try w.finish()
            let rev = try c.setAttachment(docID: "att3", parent: l.rev("att3"), name: "a", contentType: nil, digest: info.digest.string)
            l.docs["att3"] = (rev, "{}")
            l.attachments["att3"] = all
        }
        step("local document") { l in
            let json = #"{"source_last_seq":7}"#
            l.local = (try c.putLocal(id: "checkpoint", json: json, parent: l.local?.rev), json)
        }
        step("view update") { _ in _ = try FaultWorkload.view(c).query().allRows() }
        step("WAL checkpoint") { _ in
            try db.store.exclusive { conn in try conn.exec("PRAGMA wal_checkpoint(PASSIVE)") }
        }
        step("compact") { _ in try db.compact() }
        put(c, "f", #"{"n":6}"#)
        put(c, "a", #"{"n":7}"#)
    }

    /// A view of every document with "n".
    static func view(_ c: Collection) throws -> View {
        let v = try c.view(named: "byN")
        v.setMapReduce(map: { doc, emit in
            if let n = try doc.object["n"] { emit.emit(n, nil) }
        }, reduce: nil, version: "1")
        return v
    }

    /// Problems: an acknowledged write missing or changed, a write never acknowledged
    /// present, a view disagreeing with the documents, the integrity check's findings.
    /// Empty: sound. `views: false` on a full disk: bringing a view's index up to date
    /// writes (and fails there with 507).
    static func problems(_ db: Database, _ l: Ledger, views: Bool = true) -> [String] {
        var out: [String] = []
        do {
            out += try db.integrityCheck()
            let c = try db.defaultCollection()
            for id in documentIDs {
                guard let acked = l.docs[id] else {
                    // Never acknowledged: no trace of it (a failed write leaves nothing).
                    if (try? c.get(docID: id, options: .deleted)) != nil { out.append("\(id): written, never acknowledged") }
                    continue
                }
                let o = try FaultWorkload.object(try c.get(docID: id, options: .deleted))
                let rev = o["_rev"]?.stringValue ?? ""
                guard rev == acked.rev else { out.append("\(id): revision \(rev), acknowledged \(acked.rev)"); continue }
                let deleted = o["_deleted"]?.boolValue == true
                if deleted != (acked.body == nil) { out.append("\(id): deleted \(deleted), acknowledged \(acked.body == nil)") }
                if let body = acked.body {
                    let want = try JSONParser.parseObject(body)
                    for (k, v) in want.members where o[k] != v { out.append("\(id).\(k): \(String(describing: o[k])), acknowledged \(v)") }
                }
            }
            for (id, bytes) in l.attachments {
                if try c.attachmentContent(docID: id, name: "a") != bytes { out.append("\(id): attachment content differs") }
            }
            let local = try? FaultWorkload.object(try c.getLocal(id: "checkpoint"))
            if local?["_rev"]?.stringValue != l.local?.rev {
                out.append("local document: \(String(describing: local?["_rev"])), acknowledged \(String(describing: l.local?.rev))")
            }
            // The view's index agrees with the documents (no cached state of a failed update).
            guard views else { return out }
            let indexed = try view(c).query().allRows().compactMap(\.docID).sorted()
            var live: [String] = []
            for id in l.docs.keys {
                if let o = try? FaultWorkload.object(try c.get(docID: id)), o["n"] != nil { live.append(id) }
            }
            if indexed != live.sorted() { out.append("view rows \(indexed), documents with n \(live.sorted())") }
        } catch {
            out.append("checking failed: \(error)")
        }
        return out
    }

    static func object(_ bytes: [UInt8]) throws -> JSONObject {
        try bytes.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
    }

    private static func generation(_ rev: String) -> Int { Int(rev.prefix { $0 != "-" }) ?? 0 }

    /// After the faults: the same handle writes again (documents, an attachment, the local
    /// document), without being reopened. Returns the error, nil when all worked.
    func writeAgain() -> CBLError? {
        let before = ledger.failures.count
        let c: Collection
        do { c = try db.defaultCollection() } catch { return CBLError.wrapping(error) }
        put(c, "a", #"{"n":8}"#)
        put(c, "after", #"{"n":8}"#)
        step("attachment again") { l in
            let bytes = FaultWorkload.content(5_000, seed: 9)
            l.docs["att1"] = (try c.setAttachment(docID: "att1", parent: l.rev("att1"), name: "a", contentType: nil, bytes: bytes), "{}")
            l.attachments["att1"] = bytes
        }
        step("local document again") { l in
            let json = #"{"source_last_seq":9}"#
            l.local = (try c.putLocal(id: "checkpoint", json: json, parent: l.local?.rev), json)
        }
        return ledger.failures.count > before ? ledger.failures.last!.error : nil
    }
}
