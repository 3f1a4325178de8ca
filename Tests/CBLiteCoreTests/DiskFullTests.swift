import XCTest
import Glibc
@testable import CBLiteCore

/// A real full disk: a small tmpfs mounted by the test (root only; in CI, where CI=true
/// and the tests run as root, not being able to mount is a failure, not a skip). What the
/// engine does when the file system says ENOSPC, at whatever point it does: 507, nothing
/// acknowledged lost, a sound file, and the same handle writing again once space is freed.
final class DiskFullTests: CBLTestCase {
    private var mountPoint: String?

    /// Mounts a tmpfs of `kib` KiB in the test's folder; its path.
    private func mountSmallDisk(kib: Int) throws -> String {
        let path = dir + "/disk"
        try FileSystem.createDirectory(path)
        if getuid() != 0 || mount("tmpfs", path, "tmpfs", 0, "size=\(kib)k") != 0 {
            let why = getuid() != 0 ? "not root" : "mount failed: \(FileSystem.errnoMessage())"
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                XCTFail("a tmpfs must be mounted in CI (\(why))")
            }
            throw XCTSkip("the real disk-full tests mount a tmpfs: \(why)")
        }
        mountPoint = path
        return path
    }

    override func tearDown() {
        let m = mountPoint
        super.tearDown()                       // closes the handles first
        if let m { umount2(m, Int32(MNT_DETACH)) }
    }

    /// A file taking `bytes` of the disk (removed to give the space back).
    private func filler(_ path: String, bytes: Int) throws {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw CBLError.internalError("filler: \(FileSystem.errnoMessage())") }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0x55, count: 65_536)
        var left = bytes
        while left > 0 {
            let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress, min(left, $0.count)) }
            guard n > 0 else { break }
            left -= n
        }
    }

    /// Documents saved until the disk is full: every failure is 507; then attachments and
    /// a transaction fail alike; once space is freed, the same handle saves again.
    func testDocumentsUntilTheDiskIsFull() throws {
        let disk = try mountSmallDisk(kib: 2048)
        try filler(disk + "/filler", bytes: 256 * 1024)
        let db = try Database.open(name: "full", directory: disk, options: OpenOptions())
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let body = #"{"s":"\#(String(repeating: "x", count: 8000))"}"#
        var acked: [String: String] = [:]
        var full: CBLError?
        for i in 0..<1000 {
            do { acked["d\(i)"] = try c.put(docID: "d\(i)", json: body, parent: nil).revID } catch let e as CBLError { full = e; break }
        }
        XCTAssertEqual(full?.status, .insufficientStorage, "\(String(describing: full))")
        XCTAssertGreaterThan(acked.count, 10)
        // Everything else that writes says the same.
        let more: [(String, () throws -> Void)] = [
            ("put", { _ = try c.put(docID: "more", json: body, parent: nil) }),
            ("attachment", { _ = try c.setAttachment(docID: "att", parent: nil, name: "a", contentType: nil, bytes: FaultWorkload.content(300_000, seed: 3)) }),
            ("transaction", {
                try db.begin()
                do { for i in 0..<20 { _ = try c.put(docID: "t\(i)", json: body, parent: nil) }; try db.commit() } catch { try? db.abort(); throw error }
            }),
        ]
        for (what, write) in more {
            XCTAssertThrowsError(try write(), what) { e in XCTAssertEqual((e as? CBLError)?.status, .insufficientStorage, "\(what): \(e)") }
        }
        // A new database cannot be made either, and leaves nothing behind that would stop
        // its creation later.
        XCTAssertThrowsError(try Database.open(name: "new", directory: disk, options: OpenOptions())) { e in
            XCTAssertEqual((e as? CBLError)?.status, .insufficientStorage, "\(e)")
        }
        XCTAssertFalse(try Database.exists(name: "new", directory: disk))
        for (id, rev) in acked { XCTAssertEqual(try FaultWorkload.object(try c.get(docID: id))["_rev"]?.stringValue, rev) }
        assertSound(db)
        // Space back: the same handle, no reopening.
        XCTAssertEqual(unlink(disk + "/filler"), 0)
        _ = try c.put(docID: "more", json: body, parent: nil)
        _ = try c.setAttachment(docID: "att", parent: nil, name: "a", contentType: nil, bytes: FaultWorkload.content(100_000, seed: 3))
        XCTAssertEqual(try c.count, Int64(acked.count + 2))
        assertSound(db)
        try Database.open(name: "new", directory: disk, options: OpenOptions()).close()
        try db.close()
        let again = try Database.open(name: "full", directory: disk, options: OpenOptions())
        defer { try? again.close() }
        XCTAssertEqual(try again.defaultCollection().count, Int64(acked.count + 2))
        assertSound(again)
    }

    /// The fault workload on a disk with little room left (so that it fills up somewhere
    /// in it): the failures are 507, the acknowledged writes stay, and after freeing space
    /// the same handle writes again.
    func testWorkloadOnANearlyFullDisk() throws {
        let disk = try mountSmallDisk(kib: 4096)
        var reports: [String] = []
        // Different amounts of room left: the disk fills at different points of the workload.
        for room in [150, 300, 450, 600] {
            let name = "room\(room)"
            let db = try Database.open(name: name, directory: disk, options: OpenOptions())
            var st = statvfs()
            XCTAssertEqual(statvfs(disk, &st), 0)
            let free = Int(st.f_bavail) * Int(st.f_frsize)
            try filler(disk + "/filler", bytes: max(0, free - room * 1024))
            let w = FaultWorkload(db, scale: 8)
            w.run()
            reports.append("\(room) KiB left: \(w.ledger.failures.count) failed step(s)")
            for f in w.ledger.failures {
                XCTAssertEqual(f.error.status, .insufficientStorage, "\(room) KiB left: \(f.step): \(f.error)")
            }
            XCTAssertEqual(FaultWorkload.problems(db, w.ledger, views: false), [], "\(room) KiB left")
            XCTAssertEqual(unlink(disk + "/filler"), 0)
            if let e = w.writeAgain() { XCTFail("\(room) KiB left: writing again failed: \(e)") }
            XCTAssertEqual(FaultWorkload.problems(db, w.ledger), [], "\(room) KiB left, after writing again")
            try db.close()
            let reopened = try Database.open(name: name, directory: disk, options: OpenOptions())
            XCTAssertEqual(FaultWorkload.problems(reopened, w.ledger), [], "\(room) KiB left, reopened")
            try reopened.delete()
        }
        print("disk full (tmpfs): " + reports.joined(separator: "; "))
    }
}
