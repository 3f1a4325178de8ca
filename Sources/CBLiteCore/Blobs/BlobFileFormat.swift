import Glibc

// ENCRYPTION SEAM
//
// Every byte of an attachment file goes through a BlobFileFormat: plaintext is written
// through an encoder and read back through a decoder, never with read()/write() on the
// file directly. Every file name comes from BlobStore.fileName(forDigest:). Together
// they are the only two places that know how content sits on disk, so an encrypted
// format (AES-GCM in chunks, so that random-access reads stay constant-memory, keys
// derived from the database key; file names from a keyed hash of the digest) replaces
// PlainBlobFileFormat and fileName(forDigest:) without touching the rest of Blobs/.
// Digests are always of the plaintext, so de-duplication keeps working.
// BlobStore.init(store:) picks the format and naming for a Store.

/// How attachment content is laid out in its file.
protocol BlobFileFormat: Sendable {
    /// The file name of the content with this digest (the digest itself when plain; a
    /// keyed hash of it when encrypted).
    func fileName(forDigest digest: BlobDigest) -> String
    /// Begins writing a new, empty file.
    func makeEncoder(for file: BlobFile) throws -> any BlobFileEncoder
    /// Opens an existing file for random-access reads of its plaintext.
    func makeDecoder(for file: BlobFile) throws -> any BlobFileDecoder
    /// True when the file's bytes are the plaintext itself. Reading such a file back
    /// right after writing it returns the page cache's copy of the bytes just hashed,
    /// which proves nothing: BlobWriter reads back only formats that transform them.
    var storesPlaintext: Bool { get }
    /// The size of a complete file holding `length` bytes of content: a put trusts an
    /// existing file under the content's name only when it has this size.
    func fileSize(forLength length: UInt64) -> UInt64
}

/// Turns plaintext into file bytes, appended to the file in order.
protocol BlobFileEncoder: AnyObject {
    func write(_ bytes: UnsafeRawBufferPointer) throws
    /// Writes whatever the format keeps back (a last chunk, a tag). No fsync, no close.
    func finish() throws
}

/// Random access to a file's plaintext.
protocol BlobFileDecoder: AnyObject {
    /// The plaintext length.
    var length: UInt64 { get }
    /// Reads up to buffer.count plaintext bytes at `offset`; 0 only at or past the end.
    func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

/// The plaintext format: the file holds the content as is.
struct PlainBlobFileFormat: BlobFileFormat {
    /// The 40 uppercase hex digits of the SHA-1 (Couchbase Lite 1.x).
    func fileName(forDigest digest: BlobDigest) -> String { digest.hex + ".blob" }

    func makeEncoder(for file: BlobFile) throws -> any BlobFileEncoder { PlainEncoder(file) }
    func makeDecoder(for file: BlobFile) throws -> any BlobFileDecoder { PlainDecoder(file, length: try file.size()) }
    var storesPlaintext: Bool { true }
    func fileSize(forLength length: UInt64) -> UInt64 { length }

    private final class PlainEncoder: BlobFileEncoder {
        let file: BlobFile
        init(_ f: BlobFile) { file = f }
        func write(_ bytes: UnsafeRawBufferPointer) throws { try file.append(bytes) }
        func finish() throws {}
    }

    private final class PlainDecoder: BlobFileDecoder {
        let file: BlobFile
        let length: UInt64
        init(_ f: BlobFile, length: UInt64) { file = f; self.length = length }
        func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            guard offset < length, buffer.count > 0 else { return 0 }
            let n = Int(min(UInt64(buffer.count), length - offset))
            return try file.read(at: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n]))
        }
    }
}

/// An open file descriptor, closed on deinit. POSIX calls only (no Foundation).
final class BlobFile {
    let fd: Int32
    let path: String
    private var isClosed = false

    private init(fd: Int32, path: String) { self.fd = fd; self.path = path }

    deinit { close() }

    /// Opens an existing file for reading: 404 when absent.
    static func openForReading(_ path: String, what: String) throws -> BlobFile {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw CBLError.notFound("\(what) is not in the attachment store") }
            throw CBLError.internalError("cannot open \(what): \(FileSystem.errnoMessage())")
        }
        return BlobFile(fd: fd, path: path)
    }

    /// Creates a new file (it must not exist) for reading and writing.
    static func create(_ path: String) throws -> BlobFile {
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileSystem.writeFailure("cannot create \(path)") }
        return BlobFile(fd: fd, path: path)
    }

    /// Opens a file given by the caller (import): 404 when absent, 400 when not a regular file.
    static func openUserFile(_ path: String) throws -> BlobFile {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw CBLError.notFound("file \(path) does not exist") }
            throw CBLError(.badRequest, "cannot open \(path): \(FileSystem.errnoMessage())")
        }
        let f = BlobFile(fd: fd, path: path)
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw CBLError.badRequest("\(path) is not a regular file")
        }
        return f
    }

    func size() throws -> UInt64 {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CBLError.internalError("cannot stat \(path): \(FileSystem.errnoMessage())") }
        return UInt64(st.st_size)
    }

    /// Appends all of `bytes` at the current offset.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        guard var p = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            let n = FaultPoint.call(.write) { Glibc.write(fd, p, left) }
            if n < 0 && errno == EINTR { continue }
            // write() taking nothing of a non-empty buffer: no room left for it.
            if n == 0 { errno = ENOSPC }
            guard n > 0 else { throw FileSystem.writeFailure("write error on \(path)") }
            p += n
            left -= n
        }
    }

    /// Reads sequentially from the current offset (imports): 0 at the end.
    func readNext(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw CBLError.internalError("read error on \(path): \(FileSystem.errnoMessage())") }
            return n
        }
    }

    /// Reads up to buffer.count bytes at `offset`, retrying short reads; fewer only at the end.
    func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw CBLError.internalError("read error on \(path): \(FileSystem.errnoMessage())") }
            if n == 0 { break }
            done += n
        }
        return done
    }

    func sync() throws { try BlobDurability.fullSync(fd, path: path) }

    /// Takes an exclusive advisory lock; false when another open file holds it.
    func tryLock() -> Bool { flock(fd, LOCK_EX | LOCK_NB) == 0 }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }
}
