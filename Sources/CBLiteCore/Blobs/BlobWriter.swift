import Glibc

/// Writes attachment content in chunks (constant memory whatever the size) into a
/// temporary file; `finish` syncs it, reads it back to verify its digest (encrypted
/// formats), renames it to its digest's name and syncs the folder (or drops it when that
/// content is stored already). Until then nothing is visible in the store; `cancel`, a
/// failure, or deinit delete the temporary file. Thread-safe (calls are serialized).
///
/// A finish called by a thread inside an explicit transaction defers the syncs and the
/// rename to the commit (PendingBlobs): the content is readable at once by that thread,
/// durable and visible to others once the transaction commits, gone if it rolls back.
public final class BlobWriter: AttachmentSink, @unchecked Sendable {
    private let store: BlobStore
    private let expected: BlobDigest?
    private let monitor = Monitor()
    private var file: BlobFile?
    private var encoder: (any BlobFileEncoder)?
    private let tempPath: String
    private var hasher = SHA1()
    private var md5 = MD5()                 // CouchDB's digest, kept beside ours
    private var count: UInt64 = 0
    private var result: BlobInfo?

    /// `group`: write directly into the calling thread's transaction's group folder (a
    /// put from memory, finished by the same call); else into tmp/.
    init(store: BlobStore, expected: BlobDigest?, group: PendingBlobs? = nil) throws {
        self.store = store
        self.expected = expected
        let f: BlobFile
        if let group {
            tempPath = group.newTemporaryPath()     // the group's lock keeps it from clean-up
            f = try BlobFile.create(tempPath)
        } else {
            try store.ensureDirectories()
            tempPath = store.tempDirectory + "/" + FileSystem.uuid() + ".tmp"
            f = try BlobFile.create(tempPath)
            // The lock tells compaction's clean-up that this file is being written.
            _ = f.tryLock()
        }
        do {
            encoder = try store.format.makeEncoder(for: f)
        } catch {
            f.close()
            unlink(tempPath)
            throw error
        }
        file = f
    }

    deinit { discard() }

    /// Bytes written so far.
    public var length: UInt64 { monitor.locked { count } }

    /// Appends a chunk. After a failure the writer is unusable (its file is deleted).
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        try monitor.locked {
            guard let encoder else { throw CBLError.badRequest(result == nil ? "blob writer is closed" : "blob writer is already finished") }
            do {
                try encoder.write(bytes)
            } catch {
                discardLocked()
                throw error
            }
            hasher.update(bytes)
            md5.update(bytes)
            count += UInt64(bytes.count)
        }
    }

    public func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }

    /// Completes the content and makes it visible under its digest. The writer is closed
    /// afterwards whatever the outcome. 400 when it does not match `expected`.
    @discardableResult
    public func finish() throws -> BlobInfo {
        try monitor.locked {
            if let result { return result }
            guard let encoder, let file else { throw CBLError.badRequest("blob writer is closed") }
            do {
                let digest = BlobDigest(hasher: &hasher)
                if let expected, expected != digest { throw store.digestMismatch(expected: expected, actual: digest) }
                try encoder.finish()
                let target = store.path(for: digest)
                // A file under its digest's name is complete and synced (never renamed
                // there before its sync): the same content stored already is trusted
                // (when its file has the right size; else this one replaces it).
                if store.hasIntact(digest, length: count) {
                    discardLocked()                       // the same content is stored already
                } else if let group = try store.transactionGroup() {
                    // Group commit: verified now, synced and installed by the commit.
                    if !store.format.storesPlaintext { try verify(file, digest: digest) }
                    BlobDurability.startWriteback(file.fd, path: tempPath)
                    try group.adopt(tempPath: tempPath, digest: digest, targetPath: target)
                    self.encoder = nil
                    self.file = nil
                    file.close()
                } else {
                    try BlobDurability.fullSync(file.fd, path: tempPath)
                    if !store.format.storesPlaintext { try verify(file, digest: digest) }
                    try BlobDurability.rename(tempPath, target)
                    self.encoder = nil
                    self.file = nil
                    file.close()
                    try store.syncDirectory()
                }
                let info = BlobInfo(digest: digest, length: count, md5: md5.finalize())
                result = info
                return info
            } catch {
                discardLocked()
                throw error
            }
        }
    }

    /// Reads the synced temporary file back through the format and checks its digest:
    /// what is renamed into place decrypts to exactly what was hashed. (Plain files are
    /// not read back: see BlobFileFormat.storesPlaintext. Every sequential read checks
    /// the digest again, BlobReader.)
    private func verify(_ file: BlobFile, digest: BlobDigest) throws {
        let decoder = try store.format.makeDecoder(for: file)
        guard decoder.length == count else {
            throw CBLError.internalError("attachment file has \(decoder.length) bytes after writing \(count)")
        }
        var h = SHA1()
        var buf = [UInt8](repeating: 0, count: BlobStore.chunkSize)
        var offset: UInt64 = 0
        while offset < count {
            let n = try buf.withUnsafeMutableBytes { try decoder.read(at: offset, into: $0) }
            guard n > 0 else { break }
            buf.withUnsafeBytes { h.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            offset += UInt64(n)
        }
        guard offset == count, BlobDigest(hasher: &h) == digest else {
            throw CBLError.internalError("attachment file does not read back as written (disk error?)")
        }
    }

    /// Abandons the content and deletes the temporary file. Harmless when already
    /// finished or cancelled.
    public func cancel() { monitor.locked { discardLocked() } }

    private func discard() { discardLocked() }

    private func discardLocked() {
        encoder = nil
        if let file {
            self.file = nil
            unlink(tempPath)                 // unlink while still holding the lock
            file.close()
        }
    }
}
