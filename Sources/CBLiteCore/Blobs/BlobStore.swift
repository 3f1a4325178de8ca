import Glibc
import Synchronization


/// The content-addressed attachment store of a database: one file per distinct content
/// in `<bundle>/attachments/`, named from the SHA-1 digest of the content (the seeds'
/// scheme), so equal content is stored once. Files are written under a temporary name
/// in `attachments/tmp/` and renamed into place only once complete, synced and their
/// digest verified: a crash mid-write leaves at most a temporary file, which is never
/// looked up and is deleted by the next compaction. So a file under a digest's name is
/// always complete and durable, and a later put of the same content trusts it.
///
/// When: outside a transaction a put (or a writer's finish) syncs the file, renames it
/// into place and syncs the folder before it returns. Inside an explicit transaction
/// the syncs are deferred to the commit and done for all the transaction's files at
/// once (PendingBlobs, group commit); until then the content is readable by the
/// transaction's own thread only, from the transaction's group folder.
///
/// Content no kept revision refers to is deleted by compaction (including content put
/// into the store and never attached to a document).
///
/// A plain value: cheap to make, safe to use from any thread.
public struct BlobStore: Sendable {
    /// `<bundle>/attachments`
    public let directory: String
    let format: any BlobFileFormat
    /// The database whose transactions defer syncs to their commit (nil: every put is
    /// synced at once, e.g. the stores of a key change).
    let database: Store?

    init(directory: String, format: any BlobFileFormat, database: Store? = nil) {
        self.directory = directory
        self.format = format
        self.database = database
    }

    /// The attachment store of a database file.
    // ENCRYPTION SEAM: the one place that picks the file format (and, with it, the
    // naming) for a Store; an encrypted store gets a keyed format here.
    init(store: Store) {
        self.init(directory: store.bundlePath + "/attachments", key: store.key, database: store)
    }

    /// The store in `directory` for a database with `key` (nil: unencrypted): encrypted
    /// databases get encrypted files with keyed names (EncryptedBlobFileFormat).
    init(directory: String, key: EncryptionKey?, database: Store? = nil) {
        self.init(directory: directory, format: key.map { EncryptedBlobFileFormat(key: $0) } ?? PlainBlobFileFormat(),
                  database: database)
    }

    /// Where files being written live until they are complete.
    var tempDirectory: String { directory + "/tmp" }

    // ENCRYPTION SEAM: all file naming goes through here. Plain: the 40 uppercase hex
    // digits of the SHA-1 (Couchbase Lite 1.x). Paths are made only from digests, never
    // from attachment names, so no name can reach outside the folder.
    func fileName(forDigest digest: BlobDigest) -> String { format.fileName(forDigest: digest) }

    /// Whether a directory entry is a stored blob (as opposed to anything else).
    // ENCRYPTION SEAM: must accept every name fileName(forDigest:) makes — compaction
    // deletes only files it recognizes here, so a mismatch would leak orphans.
    static func isBlobFileName(_ name: String) -> Bool {
        let u = Array(name.utf8)
        guard name.hasSuffix(".blob") else { return false }
        switch u.count {
        case 45: return u[0..<40].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x46) }   // plain
        case 69: return u[0..<64].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }   // encrypted
        default: return false
        }
    }

    /// Where content `digest` is installed (durable).
    func path(for digest: BlobDigest) -> String { directory + "/" + fileName(forDigest: digest) }

    /// The files the calling thread's transaction put so far (nil outside a transaction
    /// or when it put none).
    var pendingGroup: PendingBlobs? { database?.currentTransaction?.pendingBlobs }

    /// The calling thread's transaction's group of pending files, made on first use; nil
    /// outside a transaction (a put is then synced at once).
    func transactionGroup() throws -> PendingBlobs? {
        guard let database, let txn = database.currentTransaction else { return nil }
        if let group = txn.pendingBlobs { return group }
        let group = try PendingBlobs(store: self)
        txn.pendingBlobs = group
        return group
    }

    /// Where the calling thread reads content `digest`: its transaction's pending copy
    /// when it put it in this transaction, else the installed file.
    func readablePath(for digest: BlobDigest) -> String {
        pendingGroup?.path(for: digest) ?? path(for: digest)
    }

    /// Whether content `digest` of `length` bytes is stored and need not be written
    /// again: put in the calling thread's transaction, or installed with the size its
    /// file must have. Installed files are synced before they get their name, so they are
    /// complete; the size check is a second line against a file truncated behind the
    /// store's back (a damaged disk, a copy cut short, an older writer): such a file is
    /// replaced by the new put instead of being trusted.
    func hasIntact(_ digest: BlobDigest, length: UInt64) -> Bool {
        if pendingGroup?.contains(digest) == true { return true }
        return FileSystem.fileSize(path(for: digest)) == Int64(clamping: format.fileSize(forLength: length))
    }

    // MARK: reading

    public func contains(_ digest: BlobDigest) -> Bool { FileSystem.exists(readablePath(for: digest)) }

    /// Opens the stored content of `digest`: 404 when the store does not have it.
    func openDecoder(_ digest: BlobDigest) throws -> (BlobFile, any BlobFileDecoder) {
        let file = try BlobFile.openForReading(readablePath(for: digest), what: "attachment content \(digest)")
        return (file, try format.makeDecoder(for: file))
    }

    /// The length of stored content: 404 when the store does not have it.
    public func length(of digest: BlobDigest) throws -> UInt64 { try openDecoder(digest).1.length }

    /// A streaming reader on stored content (404 when absent).
    public func openReader(_ digest: BlobDigest) throws -> BlobReader {
        let (file, decoder) = try openDecoder(digest)
        return BlobReader(digest: digest, file: file, decoder: decoder)
    }

    /// The whole content in memory (verified against its digest).
    public func read(_ digest: BlobDigest) throws -> [UInt8] {
        let reader = try openReader(digest)
        defer { reader.close() }
        guard reader.length <= UInt64(Int.max / 2) else { throw CBLError.badRequest("attachment too large to read into memory") }
        var out = [UInt8](repeating: 0, count: Int(reader.length))
        var filled = 0
        while filled < out.count {
            let n = try out.withUnsafeMutableBytes { try reader.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
            guard n > 0 else { throw CBLError.internalError("attachment content \(digest) is shorter than its length") }
            filled += n
        }
        if out.isEmpty { _ = try reader.read(into: UnsafeMutableRawBufferPointer(start: nil, count: 0)) }
        return out
    }

    /// Streams stored content into a new file at `path` (written beside it under a
    /// temporary name, then renamed over `path`): constant memory.
    public func copy(_ digest: BlobDigest, toFile path: String) throws {
        guard !path.isEmpty else { throw CBLError.badRequest("path is empty") }
        if FileSystem.isDirectory(path) { throw CBLError.badRequest("\(path) is a directory") }
        let reader = try openReader(digest)
        defer { reader.close() }
        let temp = path + ".cblite-tmp-" + FileSystem.uuid()
        let out: BlobFile
        do { out = try BlobFile.create(temp) } catch let e as CBLError {
            throw CBLError(.badRequest, "cannot write to \(path): \(e.message)")
        }
        do {
            var buf = [UInt8](repeating: 0, count: BlobStore.chunkSize)
            while true {
                let n = try buf.withUnsafeMutableBytes { try reader.read(into: $0) }
                if n == 0 { break }
                try buf.withUnsafeBytes { try out.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            }
            try out.sync()
            out.close()
            try FileSystem.rename(temp, path)
        } catch {
            out.close()
            unlink(temp)
            throw error
        }
    }

    // MARK: writing

    static let chunkSize = 1 << 16

    /// A streaming writer: write chunks, then finish (constant memory whatever the size).
    /// `expected`: the digest the content must have (400 on mismatch at finish).
    public func makeWriter(expected: BlobDigest? = nil) throws -> BlobWriter {
        try BlobWriter(store: self, expected: expected)
    }

    /// Stores bytes from memory.
    @discardableResult
    public func put(_ bytes: UnsafeRawBufferPointer, expected: BlobDigest? = nil) throws -> BlobInfo {
        if let expected, hasIntact(expected, length: UInt64(bytes.count)) {
            // Already stored: check the claim without writing anything.
            let actual = BlobDigest.of(bytes)
            guard actual == expected else { throw digestMismatch(expected: expected, actual: actual) }
            return BlobInfo(digest: actual, length: UInt64(bytes.count), md5: MD5.hash(bytes))
        }
        // Inside a transaction the file is written in its group folder at once (no move).
        let w = try BlobWriter(store: self, expected: expected, group: try transactionGroup())
        do {
            try w.write(bytes)
            return try w.finish()
        } catch {
            w.cancel()
            throw error
        }
    }

    @discardableResult
    public func put(_ bytes: [UInt8], expected: BlobDigest? = nil) throws -> BlobInfo {
        try bytes.withUnsafeBytes { try put($0, expected: expected) }
    }

    /// Stores a copy of the file at `path` (streamed: constant memory).
    @discardableResult
    public func importFile(path: String, expected: BlobDigest? = nil) throws -> BlobInfo {
        guard !path.isEmpty else { throw CBLError.badRequest("path is empty") }
        let src = try BlobFile.openUserFile(path)
        defer { src.close() }
        let w = try makeWriter(expected: expected)
        do {
            var buf = [UInt8](repeating: 0, count: BlobStore.chunkSize)
            while true {
                let n = try buf.withUnsafeMutableBytes { try src.readNext(into: $0) }
                if n == 0 { break }
                try buf.withUnsafeBytes { try w.write(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            }
            return try w.finish()
        } catch {
            w.cancel()
            throw error
        }
    }

    /// MD5s read through, by content: a pure function of it, so shared by every store.
    private static let md5Memo = Mutex<[BlobDigest: [UInt8]]>([:])

    /// The MD5 of stored content (CouchDB's digest), read through once per process: for
    /// content whose stubs were written before the MD5 was kept beside the SHA-1.
    public func md5(of digest: BlobDigest) throws -> [UInt8] {
        if let known = BlobStore.md5Memo.withLock({ $0[digest] }) { return known }
        let md5 = try readMD5(of: digest)
        BlobStore.md5Memo.withLock { memo in
            if memo.count >= 4096 { memo.removeAll() }          // bounded: older stubs only
            memo[digest] = md5
        }
        return md5
    }

    private func readMD5(of digest: BlobDigest) throws -> [UInt8] {
        let reader = try openReader(digest)
        defer { reader.close() }
        var h = MD5()
        while true {
            let chunk = try reader.read(max: BlobStore.chunkSize)
            if chunk.isEmpty { break }
            h.update(chunk)
        }
        return h.finalize()
    }

    func digestMismatch(expected: BlobDigest, actual: BlobDigest) -> CBLError {
        CBLError.badRequest("attachment content does not match its digest: expected \(expected), got \(actual)")
    }

    func ensureDirectories() throws {
        try FileSystem.createDirectory(tempDirectory)
    }

    /// fsync of the folder, so that a rename into it is durable.
    func syncDirectory() throws { try BlobDurability.syncDirectory(directory) }

    // MARK: clean-up (compaction)

    /// File names of every stored blob.
    func storedFileNames() throws -> [String] {
        try FileSystem.list(directory).filter(BlobStore.isBlobFileName)
    }

    /// Deletes every stored blob whose digest is not in `referenced`, and the temporary
    /// files no writer is working on. Returns how many blobs were deleted. The caller
    /// holds the database's write lock, so no save can start referring to a file
    /// between the scan and the deletion.
    @discardableResult
    func deleteBlobs(notIn referenced: Set<BlobDigest>) throws -> Int {
        let keep = Set(referenced.map { fileName(forDigest: $0) })
        var deleted = 0
        for name in try storedFileNames() where !keep.contains(name) {
            if unlink(directory + "/" + name) == 0 { deleted += 1 }
        }
        cleanTemporaryFiles()
        return deleted
    }

    /// Deletes temporary files left by writers that ended without finishing (a crash, a
    /// killed process), and the group folders of transactions that never committed
    /// (PendingBlobs). A live writer holds an exclusive lock on its file, a live
    /// transaction on its folder, which keeps them.
    @discardableResult
    func cleanTemporaryFiles() -> Int {
        guard let names = try? FileSystem.list(tempDirectory) else { return 0 }
        var removed = 0
        for name in names {
            let p = tempDirectory + "/" + name
            let fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            if fd < 0 {
                if unlink(p) == 0 { removed += 1 }      // e.g. a symlink: not ours either way
                continue
            }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 {
                var st = stat()
                if fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR {
                    if (try? FileSystem.remove(p)) != nil { removed += 1 }
                } else if unlink(p) == 0 {
                    removed += 1
                }
            }
            close(fd)
        }
        return removed
    }
}

extension Database {
    /// This database's attachment store.
    public var blobStore: BlobStore {
        get throws {
            try checkOpen()
            return BlobStore(store: store)
        }
    }
}
