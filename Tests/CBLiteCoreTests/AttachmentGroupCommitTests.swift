import XCTest
import Glibc
@testable import CBLiteCore

/// When attachment content becomes durable: at once outside a transaction, at the commit
/// (all of the transaction's files together, before SQLite's COMMIT) inside one
/// (PendingBlobs). The sync steps are observed (and failed) through
/// BlobDurability.testHook.
final class AttachmentGroupCommitTests: CBLTestCase {
    /// Durability steps seen by the hook for paths under this test's folder.
    private var events = Locked<[BlobDurability.Event]>([])
    /// Set to fail a step (as an I/O error would).
    private var failOn = Locked<((BlobDurability.Event) -> Bool)?>(nil)

    override func setUp() {
        super.setUp()
        let mine = dir
        let events = events, failOn = failOn
        BlobDurability.testHook = { event in
            let path: String
            switch event {
            case .writeback(let p), .fileSync(let p), .directorySync(let p), .fileSystemSync(let p): path = p
            case .rename(let from, _): path = from
            }
            guard path.hasPrefix(mine) else { return }
            events.with { $0.append(event) }
            if let f = failOn.get(), f(event) { throw CBLError.internalError("injected I/O error") }
        }
    }

    override func tearDown() {
        BlobDurability.testHook = nil
        PendingBlobs.syncfsThreshold = 16
        super.tearDown()
    }

    private func content(_ i: Int, size: Int = 10_000) -> [UInt8] { AttachmentStoreTests.pattern(size, seed: UInt64(i + 1)) }
    private func syncs() -> [BlobDurability.Event] {
        events.get().filter { if case .writeback = $0 { return false }; return true }
    }
    private func tmpEntries(_ store: BlobStore) -> [String] { (try? FileSystem.list(store.tempDirectory)) ?? [] }

    func testPutOutsideTransactionIsDurableWhenItReturns() throws {
        let db = try open()
        let store = try db.blobStore
        let bytes = content(1)
        let info = try store.put(bytes)
        let target = store.path(for: info.digest)
        let e = syncs()
        // file synced under its temporary name, then renamed to its digest's name, then the folder synced
        XCTAssertEqual(e.count, 3, "\(e)")
        guard e.count == 3 else { return }
        guard case .fileSync(let synced) = e[0], case .rename(let from, let to) = e[1] else { return XCTFail("\(e)") }
        XCTAssertEqual(synced, from)
        XCTAssertEqual(to, target)
        XCTAssertEqual(e[2], .directorySync(store.directory))
        XCTAssertEqual(FileSystem.fileSize(target), Int64(bytes.count))
        // The same content again: already durable, nothing written or synced.
        events.set([])
        XCTAssertEqual(try store.put(bytes).digest, info.digest)
        XCTAssertEqual(syncs(), [])
    }

    func testPutInTransactionIsReadableAtOnceAndInstalledByTheCommit() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let store = try db.blobStore
        let all = (0..<5).map { content($0) }
        try db.begin()
        var digests: [BlobDigest] = []
        for (i, bytes) in all.enumerated() {
            let info = try store.put(bytes)
            digests.append(info.digest)
            // readable, attachable and of the right length right after the put, in the transaction
            XCTAssertEqual(try store.read(info.digest), bytes)
            XCTAssertEqual(try store.length(of: info.digest), UInt64(bytes.count))
            XCTAssertTrue(store.contains(info.digest))
            _ = try c.setAttachment(docID: "d\(i)", parent: nil, name: "a", contentType: nil, digest: info.digest.string)
            XCTAssertEqual(try c.attachmentContent(docID: "d\(i)", name: "a"), bytes)
            // not under its digest's name yet
            XCTAssertFalse(FileSystem.exists(store.path(for: info.digest)))
        }
        // the same content twice in one transaction: one file
        XCTAssertEqual(try store.put(all[0]).digest, digests[0])
        XCTAssertEqual(syncs(), [], "nothing is synced or renamed into place before the commit")
        XCTAssertEqual(events.get().count, 5, "writeback started for each new file")
        // Another thread does not see uncommitted content.
        let seen = Locked<Bool?>(nil)
        let second = digests[1]
        runOnThreads(1) { _ in seen.set(store.contains(second)) }
        XCTAssertEqual(seen.get(), false)

        try db.commit()
        let e = syncs()
        // 5 file syncs, then 5 renames, then ONE folder sync
        XCTAssertEqual(e.count, 11, "\(e)")
        guard e.count == 11 else { return }
        for k in 0..<5 { guard case .fileSync = e[k] else { return XCTFail("\(e)") } }
        for k in 5..<10 { guard case .rename = e[k] else { return XCTFail("\(e)") } }
        XCTAssertEqual(e[10], .directorySync(store.directory))
        let synced = Set(e[0..<5].map { if case .fileSync(let p) = $0 { return p }; return "" })
        let renamed = Set(e[5..<10].map { if case .rename(let f, _) = $0 { return f }; return "" })
        XCTAssertEqual(synced, renamed, "every file renamed into place was synced first")
        for (bytes, d) in zip(all, digests) {
            XCTAssertEqual(FileSystem.fileSize(store.path(for: d)), Int64(bytes.count))
            XCTAssertEqual(try store.read(d), bytes)
        }
        XCTAssertEqual(tmpEntries(store), [], "the transaction's group folder is gone")
        runOnThreads(1) { _ in seen.set(store.contains(second)) }
        XCTAssertEqual(seen.get(), true)
        for i in 0..<5 { XCTAssertEqual(try c.attachmentContent(docID: "d\(i)", name: "a"), all[i]) }
        // A transaction that puts no new content syncs nothing.
        events.set([])
        try db.begin()
        XCTAssertEqual(try store.put(all[2]).digest, digests[2])
        try db.commit()
        XCTAssertEqual(syncs(), [])
    }

    func testAbortDiscardsContentPutInTheTransaction() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let store = try db.blobStore
        let kept = try store.put(content(0))          // before: stays
        try db.begin()
        let a = try store.put(content(1))
        XCTAssertEqual(try store.put(content(0)).digest, kept.digest)
        _ = try c.setAttachment(docID: "d", parent: nil, name: "a", contentType: nil, digest: a.digest.string)
        XCTAssertEqual(tmpEntries(store).count, 1, "one group folder")
        try db.abort()
        XCTAssertFalse(store.contains(a.digest))
        assertStatus(.notFound, try store.length(of: a.digest))
        assertStatus(.notFound, try c.get(docID: "d"))
        XCTAssertTrue(store.contains(kept.digest))
        XCTAssertEqual(tmpEntries(store), [])
        assertStatus(.preconditionFailed, try c.setAttachment(docID: "d", parent: nil, name: "a", contentType: nil, digest: a.digest.string))
        // Put again outside a transaction: stored and durable at once.
        events.set([])
        XCTAssertEqual(try store.put(content(1)).digest, a.digest)
        XCTAssertEqual(syncs().count, 3)
        XCTAssertEqual(try store.read(a.digest), content(1))
    }

    /// The install runs before SQLite's COMMIT: when a sync fails, the commit fails and
    /// the documents that name the content are not committed.
    func testFailedSyncAtCommitRollsTheTransactionBack() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let store = try db.blobStore
        try db.begin()
        var digests: [BlobDigest] = []
        for i in 0..<3 {
            let info = try store.put(content(i))
            digests.append(info.digest)
            _ = try c.setAttachment(docID: "d\(i)", parent: nil, name: "a", contentType: nil, digest: info.digest.string)
        }
        var syncCount = 0
        failOn.set { event in
            if case .fileSync = event { syncCount += 1; return syncCount == 2 }
            return false
        }
        assertStatus(.internalError, try db.commit())
        failOn.set(nil)
        XCTAssertEqual(db.store.transactionDepth, 0)
        for i in 0..<3 { assertStatus(.notFound, try c.get(docID: "d\(i)"), "d\(i) must not be committed") }
        XCTAssertEqual(try c.count, 0)
        for d in digests { XCTAssertFalse(store.contains(d)) }
        XCTAssertEqual(tmpEntries(store), [])
        // Same when the folder sync fails (after the renames): nothing committed; files
        // renamed already are complete orphans that compaction deletes.
        try db.begin()
        let info = try store.put(content(7))
        _ = try c.setAttachment(docID: "x", parent: nil, name: "a", contentType: nil, digest: info.digest.string)
        failOn.set { if case .directorySync = $0 { return true }; return false }
        assertStatus(.internalError, try db.commit())
        failOn.set(nil)
        assertStatus(.notFound, try c.get(docID: "x"))
        XCTAssertEqual(FileSystem.fileSize(store.path(for: info.digest)), Int64(content(7).count))
        try db.compact()
        XCTAssertFalse(store.contains(info.digest))
    }

    /// What a crash (or power loss) between a put in a transaction and its commit leaves:
    /// the group folder under tmp/, possibly with torn files, and nothing under the
    /// digests' names. Simulated by copying the bundle while the transaction is open and
    /// tearing the copy's pending files.
    func testCrashBeforeCommitLeavesNothingTrusted() throws {
        let db = try open("db")
        let c = try db.defaultCollection()
        let store = try db.blobStore
        let a = content(1, size: 200_000), b = content(2, size: 5_000)
        try db.begin()
        let da = try store.put(a).digest, db2 = try store.put(b).digest
        _ = try c.setAttachment(docID: "d", parent: nil, name: "a", contentType: nil, digest: da.string)
        XCTAssertFalse(FileSystem.exists(store.path(for: da)))
        try FileSystem.copyTree(db.path, dir + "/crashed.cblite2")
        try db.abort()
        let copyTmp = dir + "/crashed.cblite2/attachments/tmp"
        let groups = try FileSystem.list(copyTmp)
        XCTAssertEqual(groups.count, 1)
        let pending = try FileSystem.list(copyTmp + "/" + groups[0]).sorted()
        XCTAssertEqual(pending.count, 2)
        // torn: one cut in half, one empty
        XCTAssertEqual(truncate(copyTmp + "/" + groups[0] + "/" + pending[0], 100_000), 0)
        XCTAssertEqual(truncate(copyTmp + "/" + groups[0] + "/" + pending[1], 0), 0)

        let crashed = try open("crashed")
        let cs = try crashed.blobStore
        XCTAssertEqual(try FileSystem.list(copyTmp), [], "the open removed the dead transaction's folder")
        XCTAssertFalse(cs.contains(da))
        XCTAssertFalse(cs.contains(db2))
        assertStatus(.notFound, try crashed.defaultCollection().get(docID: "d"))
        // A later put of the same bytes writes them whole, in a transaction or not.
        try crashed.begin()
        XCTAssertEqual(try cs.put(a).digest, da)
        try crashed.commit()
        XCTAssertEqual(try cs.put(b).digest, db2)
        XCTAssertEqual(try cs.read(da), a)
        XCTAssertEqual(try cs.read(db2), b)
    }

    /// A file under a digest's name with the wrong size (truncated behind the store's
    /// back) is not trusted by a later put: the put replaces it.
    func testTruncatedFileUnderDigestNameIsReplacedByAPut() throws {
        for encrypted in [false, true] {
            let name = encrypted ? "enc" : "plain"
            let db = try open(name, options: encrypted ? #"{"encryption_key":{"password":"pw"}}"# : nil)
            let store = try db.blobStore
            for (k, size) in [0, 1, 65_536, 65_537, 131_072, 200_000].enumerated() {
                let bytes = content(k, size: size)
                let info = try store.put(bytes)
                let path = store.path(for: info.digest)
                let full = FileSystem.fileSize(path)
                XCTAssertEqual(UInt64(full), store.format.fileSize(forLength: UInt64(size)), "\(name) \(size)")
                for (inTxn, cut) in [(false, full / 2), (true, 0)] where cut != full {
                    XCTAssertEqual(truncate(path, off_t(cut)), 0)
                    if inTxn { try db.begin() }
                    XCTAssertEqual(try store.put(bytes).digest, info.digest)
                    XCTAssertEqual(try store.put(bytes, expected: info.digest).digest, info.digest)
                    if inTxn { try db.commit() }
                    XCTAssertEqual(FileSystem.fileSize(path), full, "\(name) \(size) \(inTxn ? "in" : "outside") a transaction")
                    XCTAssertEqual(try store.read(info.digest), bytes)
                }
            }
        }
    }

    /// Writers and encrypted stores take the same path; the transaction's folder survives
    /// the clean-up of another open (it is locked), and reopening reads everything back.
    func testWriterAndEncryptedStoreInTransaction() throws {
        let options = #"{"encryption_key":{"password":"pw"}}"#
        let db = try open("enc", options: options)
        let c = try db.defaultCollection()
        let store = try db.blobStore
        let big = content(3, size: 300_000)
        try db.begin()
        let w = try store.makeWriter()
        try w.write(Array(big[0..<100_000]))
        try w.write(Array(big[100_000...]))
        let info = try w.finish()
        XCTAssertEqual(try store.read(info.digest), big)
        _ = try c.setAttachment(docID: "d", parent: nil, name: "big", contentType: nil, digest: info.digest.string)
        XCTAssertEqual(syncs(), [])
        // Another handle opened meanwhile runs the open-time clean-up: the live group stays.
        let other = try Database.open(name: "enc", directory: dir, options: OpenOptions(json: options))
        XCTAssertEqual(tmpEntries(store).count, 1)
        try db.commit()
        XCTAssertEqual(syncs().filter { if case .directorySync = $0 { return true }; return false }.count, 1)
        XCTAssertEqual(try other.defaultCollection().attachmentContent(docID: "d", name: "big"), big)
        try other.close()
        try db.close()
        let again = try open("enc", options: options)
        XCTAssertEqual(try again.defaultCollection().attachmentContent(docID: "d", name: "big"), big)
    }

    /// Many files: one syncfs() makes them all durable (one flush of the disk), before the
    /// renames and the folder sync; a failing syncfs fails the commit.
    func testManyFilesAreMadeDurableWithOneFileSystemSync() throws {
        XCTAssertTrue(BlobDurability.canSyncFileSystem)
        PendingBlobs.syncfsThreshold = 4
        let db = try open()
        let c = try db.defaultCollection()
        let store = try db.blobStore
        try db.begin()
        var digests: [BlobDigest] = []
        for i in 0..<6 {
            let info = try store.put(content(i))
            digests.append(info.digest)
            _ = try c.setAttachment(docID: "d\(i)", parent: nil, name: "a", contentType: nil, digest: info.digest.string)
        }
        try db.commit()
        let e = syncs()
        XCTAssertEqual(e.count, 8, "\(e)")       // one syncfs, 6 renames, one folder sync
        guard e.count == 8 else { return }
        guard case .fileSystemSync = e[0] else { return XCTFail("\(e)") }
        for k in 1..<7 { guard case .rename = e[k] else { return XCTFail("\(e)") } }
        XCTAssertEqual(e[7], .directorySync(store.directory))
        for (i, d) in digests.enumerated() { XCTAssertEqual(try store.read(d), content(i)) }
        // Below the threshold: one fdatasync per file.
        events.set([])
        try db.begin()
        for i in 10..<13 { _ = try store.put(content(i)) }
        try db.commit()
        XCTAssertEqual(syncs().filter { if case .fileSync = $0 { return true }; return false }.count, 3)
        // A failing syncfs fails the commit: nothing committed, nothing installed.
        events.set([])
        try db.begin()
        var more: [BlobDigest] = []
        for i in 20..<25 {
            let info = try store.put(content(i))
            more.append(info.digest)
            _ = try c.setAttachment(docID: "m\(i)", parent: nil, name: "a", contentType: nil, digest: info.digest.string)
        }
        failOn.set { if case .fileSystemSync = $0 { return true }; return false }
        assertStatus(.internalError, try db.commit())
        failOn.set(nil)
        for i in 20..<25 { assertStatus(.notFound, try c.get(docID: "m\(i)")) }
        for d in more { XCTAssertFalse(store.contains(d)) }
        XCTAssertEqual(tmpEntries(store), [])
    }
}
