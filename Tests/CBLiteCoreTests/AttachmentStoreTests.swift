import XCTest
import Glibc
@testable import CBLiteCore

/// The content-addressed store itself: digests, files, streaming, crash safety.
final class AttachmentStoreTests: CBLTestCase {
    /// Deterministic pseudo-random bytes (xorshift), so large content is not trivially compressible or periodic.
    static func pattern(_ count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
        var x = seed
        var out = [UInt8](repeating: 0, count: count)
        for i in 0..<count {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17
            out[i] = UInt8(truncatingIfNeeded: x)
        }
        return out
    }

    func blobFiles(_ store: BlobStore) -> [String] { ((try? FileSystem.list(store.directory)) ?? []).filter { $0.hasSuffix(".blob") }.sorted() }
    func tempFiles(_ store: BlobStore) -> [String] { (try? FileSystem.list(store.tempDirectory)) ?? [] }

    func testDigestFormatAndFileName() throws {
        // SHA-1("") = da39a3ee5e6b4b0d3255bfef95601890afd80709
        let empty = BlobDigest.of([UInt8]())
        XCTAssertEqual(empty.string, "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=")
        XCTAssertEqual(empty.hex, "DA39A3EE5E6B4B0D3255BFEF95601890AFD80709")
        // SHA-1("abc") = a9993e364706816aba3e25717850c26c9cd0d89d
        let abc = BlobDigest.of(Array("abc".utf8))
        XCTAssertEqual(abc.hex, "A9993E364706816ABA3E25717850C26C9CD0D89D")
        XCTAssertEqual(BlobDigest(abc.string), abc)
        let db = try open()
        let store = try db.blobStore
        XCTAssertEqual(store.fileName(forDigest: abc), "A9993E364706816ABA3E25717850C26C9CD0D89D.blob")
        XCTAssertEqual(store.directory, db.path + "/attachments")
        for bad in ["", "sha1-", "md5-2jmj7l5rSw0yVb/vlWAYkK/YBwk=", "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBw", "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk==",
                    "sha1-2jmj7l5rSw0yVb/vlWAYkK/YB!k=", "SHA1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=", "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=x"] {
            XCTAssertNil(BlobDigest(bad), bad)
        }
        XCTAssertTrue(BlobStore.isBlobFileName("A9993E364706816ABA3E25717850C26C9CD0D89D.blob"))
        XCTAssertFalse(BlobStore.isBlobFileName("a9993e364706816aba3e25717850c26c9cd0d89d.blob"))
        XCTAssertFalse(BlobStore.isBlobFileName("tmp"))
    }

    func testBase64() {
        for n in 0..<70 {
            let b = Self.pattern(n, seed: UInt64(n + 1))
            let e = Base64.encode(b)
            XCTAssertEqual(e.utf8.count, (n + 2) / 3 * 4)
            XCTAssertEqual(Base64.decode(e.utf8), b, "length \(n)")
            XCTAssertEqual(Base64.decode(e.utf8.filter { $0 != UInt8(ascii: "=") }), b, "unpadded, length \(n)")
        }
        XCTAssertEqual(Base64.decode("aGk=".utf8), Array("hi".utf8))
        XCTAssertEqual(Base64.decode("aG\nk=".utf8), Array("hi".utf8))
        for bad in ["a", "aGk=a", "a===", "aGk*", "aGl=", "====", "aG=k"] { XCTAssertNil(Base64.decode(bad.utf8), bad) }
    }

    func testPutEmptySmallAndDedup() throws {
        let db = try open()
        let store = try db.blobStore
        let empty = try store.put([UInt8]())
        XCTAssertEqual(empty.length, 0)
        XCTAssertEqual(empty.digest.string, "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=")
        XCTAssertTrue(store.contains(empty.digest))
        XCTAssertEqual(try store.read(empty.digest), [])
        XCTAssertEqual(try store.length(of: empty.digest), 0)

        let hello = try store.put(Array("hello".utf8))
        XCTAssertEqual(hello.length, 5)
        XCTAssertEqual(try store.read(hello.digest), Array("hello".utf8))
        XCTAssertTrue(FileSystem.exists(store.directory + "/" + hello.digest.hex + ".blob"))
        // The file holds the plain content (no encryption configured).
        XCTAssertEqual(try readFile(store.path(for: hello.digest)), Array("hello".utf8))

        let again = try store.put(Array("hello".utf8))
        XCTAssertEqual(again, hello)
        XCTAssertEqual(blobFiles(store).count, 2, "equal content is stored once")
        XCTAssertEqual(tempFiles(store), [], "no temporary file left behind")

        // A claimed digest that does not match: 400, nothing stored.
        assertStatus(.badRequest, try store.put(Array("other".utf8), expected: hello.digest))
        assertStatus(.badRequest, try store.put(Array("fresh".utf8), expected: BlobDigest.of(Array("not fresh".utf8))))
        XCTAssertEqual(blobFiles(store).count, 2)
        XCTAssertEqual(tempFiles(store), [])
        assertStatus(.notFound, try store.read(BlobDigest.of(Array("absent".utf8))))
        assertStatus(.notFound, try store.length(of: BlobDigest.of(Array("absent".utf8))))
    }

    func readFile(_ path: String) throws -> [UInt8] {
        let f = try BlobFile.openForReading(path, what: path)
        var out = [UInt8](repeating: 0, count: Int(try f.size()))
        _ = try out.withUnsafeMutableBytes { try f.read(at: 0, into: $0) }
        return out
    }

    func testLargeStreamedWriteAndRead() throws {
        let db = try open()
        let store = try db.blobStore
        let chunk = 1 << 16
        let total = 50 * 1024 * 1024 + 123          // 50 MB and a partial last chunk
        let block = Self.pattern(chunk + 17)
        let w = try store.makeWriter()
        var hasherInput = 0
        var expected = BlobHasher()
        var i = 0
        while hasherInput < total {
            let n = min(chunk, total - hasherInput)
            let slice = Array(block[(i % 17)..<((i % 17) + n)])     // vary content per chunk
            try w.write(slice)
            expected.update(slice)
            hasherInput += n
            i += 1
        }
        XCTAssertEqual(w.length, UInt64(total))
        XCTAssertEqual(blobFiles(store), [], "nothing visible before finish")
        XCTAssertEqual(tempFiles(store).count, 1)
        let info = try w.finish()
        XCTAssertEqual(info.length, UInt64(total))
        XCTAssertEqual(info.digest, expected.digest)
        XCTAssertEqual(blobFiles(store), [info.digest.hex + ".blob"])
        XCTAssertEqual(tempFiles(store), [])
        XCTAssertEqual(try w.finish(), info, "finish is idempotent once done")
        assertStatus(.badRequest, try w.write([1]))

        // Read it back in odd-sized chunks, verifying the digest on the way.
        let r = try store.openReader(info.digest)
        XCTAssertEqual(r.length, UInt64(total))
        var check = BlobHasher()
        var got = 0
        var buf = [UInt8](repeating: 0, count: 40_000)
        while true {
            let n = try buf.withUnsafeMutableBytes { try r.read(into: $0) }
            if n == 0 { break }
            check.update(Array(buf[0..<n]))
            got += n
        }
        XCTAssertEqual(got, total)
        XCTAssertEqual(check.digest, info.digest)
        // Seek: the 100 bytes at offset 7 * chunk + 5 are chunk 7's bytes 5..<105.
        try r.seek(to: UInt64(7 * chunk + 5))
        XCTAssertEqual(try r.read(max: 100), Array(block[(7 % 17 + 5)..<(7 % 17 + 105)]))
        try r.seek(to: UInt64(total - 3))
        XCTAssertEqual(try r.read(max: 100).count, 3)
        XCTAssertEqual(try r.read(max: 100), [])
        assertStatus(.badRequest, try r.seek(to: UInt64(total + 1)))
        r.close()
        assertStatus(.badRequest, try r.read(max: 1))

        // Dedup through a second writer: the temporary file is dropped, one file stays.
        let w2 = try store.makeWriter(expected: info.digest)
        var written = 0
        i = 0
        while written < total {
            let n = min(chunk, total - written)
            try w2.write(Array(block[(i % 17)..<((i % 17) + n)]))
            written += n
            i += 1
        }
        XCTAssertEqual(try w2.finish(), info)
        XCTAssertEqual(blobFiles(store).count, 1)
        XCTAssertEqual(tempFiles(store), [])
    }

    func testWriterCancelAndExpectedMismatch() throws {
        let db = try open()
        let store = try db.blobStore
        let w = try store.makeWriter()
        try w.write(Array("partial".utf8))
        XCTAssertEqual(tempFiles(store).count, 1)
        w.cancel()
        XCTAssertEqual(tempFiles(store), [])
        XCTAssertEqual(blobFiles(store), [])
        assertStatus(.badRequest, try w.write([1]))
        assertStatus(.badRequest, try w.finish())

        let w2 = try store.makeWriter(expected: BlobDigest.of(Array("abc".utf8)))
        try w2.write(Array("abd".utf8))
        assertStatus(.badRequest, try w2.finish())
        XCTAssertEqual(tempFiles(store), [], "a failed finish leaves no temporary file")
        XCTAssertEqual(blobFiles(store), [])

        // A writer dropped without finishing removes its file too.
        do {
            let w3 = try store.makeWriter()
            try w3.write(Array("dropped".utf8))
            XCTAssertEqual(tempFiles(store).count, 1)
        }
        XCTAssertEqual(tempFiles(store), [])
    }

    /// A crash mid-write leaves a temporary file: never visible, deleted by compaction —
    /// while the temporary file of a writer still at work survives compaction.
    func testCrashLeftoverIsInvisibleAndCleaned() throws {
        let db = try open()
        let store = try db.blobStore
        try store.ensureDirectories()
        // What a killed process leaves: a temporary file nobody holds a lock on.
        let content = Array("half of an attachment".utf8)
        let leftover = store.tempDirectory + "/crashed.tmp"
        let fd = Glibc.open(leftover, O_WRONLY | O_CREAT, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        _ = content.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        Glibc.close(fd)
        let digest = BlobDigest.of(content)
        XCTAssertFalse(store.contains(digest))
        assertStatus(.notFound, try store.length(of: digest))
        let c = try db.defaultCollection()
        let e = assertStatus(.preconditionFailed, try c.setAttachment(docID: "d", parent: nil, name: "a", contentType: nil, digest: digest.string))
        XCTAssertTrue(e?.message.contains("attachment content missing") ?? false)

        // A live writer's temporary file is locked and survives.
        let live = try store.makeWriter()
        try live.write(Array("in progress".utf8))
        try db.compact()
        XCTAssertFalse(FileSystem.exists(leftover), "compaction deletes the leftover")
        XCTAssertEqual(tempFiles(store).count, 1, "the live writer's file is kept")
        let info = try live.finish()
        XCTAssertEqual(try store.read(info.digest), Array("in progress".utf8))
        XCTAssertEqual(tempFiles(store), [])
    }

    func testCorruptContentIsDetected() throws {
        let db = try open()
        let store = try db.blobStore
        let c = try db.defaultCollection()
        let rev = try c.setAttachment(docID: "d", parent: nil, name: "a.txt", contentType: "text/plain", bytes: Array("original".utf8))
        XCTAssertEqual(gen(rev), 1)
        let digest = try c.attachment(docID: "d", name: "a.txt").digest
        // Damage the file behind the engine's back (same length).
        let fd = Glibc.open(store.path(for: digest), O_WRONLY)
        _ = Array("ORIGINAL".utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        Glibc.close(fd)
        assertStatus(.internalError, try c.attachmentContent(docID: "d", name: "a.txt"))
        let r = try c.openAttachment(docID: "d", name: "a.txt")
        XCTAssertEqual(try r.read(max: 3), Array("ORI".utf8), "partial reads are not checked yet")
        assertStatus(.internalError, try r.read(max: 100))
        // After a seek the read is not sequential any more: no digest check, no error.
        let r2 = try c.openAttachment(docID: "d", name: "a.txt")
        try r2.seek(to: 2)
        XCTAssertEqual(try r2.read(max: 100), Array("IGINAL".utf8))
    }

    func testImportFileAndCopyToFile() throws {
        let db = try open()
        let store = try db.blobStore
        let src = dir + "/source.bin"
        let content = Self.pattern(300_001)
        XCTAssertTrue(FileManagerShim.write(content, to: src))
        let info = try store.importFile(path: src)
        XCTAssertEqual(info.length, 300_001)
        XCTAssertEqual(info.digest, BlobDigest.of(content))
        XCTAssertEqual(try store.read(info.digest), content)
        assertStatus(.notFound, try store.importFile(path: dir + "/nope"))
        assertStatus(.badRequest, try store.importFile(path: dir))
        assertStatus(.badRequest, try store.importFile(path: ""))

        let dst = dir + "/out/copy.bin"
        assertStatus(.badRequest, try store.copy(info.digest, toFile: dst), "folder does not exist")
        try FileSystem.createDirectory(dir + "/out")
        try store.copy(info.digest, toFile: dst)
        XCTAssertEqual(try readFile(dst), content)
        XCTAssertEqual(try FileSystem.list(dir + "/out"), ["copy.bin"], "no temporary file left beside it")
        // Copying over an existing file replaces it.
        let small = try store.put(Array("small".utf8))
        try store.copy(small.digest, toFile: dst)
        XCTAssertEqual(try readFile(dst), Array("small".utf8))
        assertStatus(.badRequest, try store.copy(small.digest, toFile: dir + "/out"))
        assertStatus(.notFound, try store.copy(BlobDigest.of(Array("x".utf8)), toFile: dir + "/out/x"))
    }

    func gen(_ rev: String) -> Int { RevID(rev)?.generation ?? -1 }
}

enum FileManagerShim {
    static func write(_ bytes: [UInt8], to path: String) -> Bool {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + off, bytes.count - off) }
            if n <= 0 { return false }
            off += n
        }
        return true
    }
}

/// Opening a database removes temporary attachment files a crashed writer left behind.
final class AttachmentTempCleanupTests: XCTestCase {
    func testOpenRemovesLeftoverTemporaryFiles() throws {
        var template = Array("/tmp/cblite-tmpclean-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { try? FileSystem.remove(dir) }
        let db = try Database.open(name: "t", directory: dir)
        _ = try db.defaultCollection().setAttachment(docID: "d", parent: nil, name: "a", contentType: nil, bytes: [1, 2, 3])
        try db.close()
        let tmp = dir + "/t.cblite2/attachments/tmp"
        try FileSystem.createDirectory(tmp)
        let leftover = try BlobFile.create(tmp + "/crashed-writer")     // as a killed process leaves it
        try [UInt8](repeating: 7, count: 100).withUnsafeBytes { try leftover.append($0) }
        leftover.close()
        XCTAssertEqual(try FileSystem.list(tmp), ["crashed-writer"])
        let again = try Database.open(name: "t", directory: dir)
        XCTAssertEqual(try FileSystem.list(tmp), [], "open must remove the leftover")
        XCTAssertEqual(try again.defaultCollection().attachmentContent(docID: "d", name: "a"), [1, 2, 3])
        try again.close()
    }
}
