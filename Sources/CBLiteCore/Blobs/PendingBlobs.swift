import Glibc

/// Attachment files put inside an explicit write transaction, made durable together by
/// its commit (group commit).
///
/// Outside a transaction a put syncs its file, renames it to its digest's name and syncs
/// the directory before it returns (two syncs per put). Inside one, the put writes and
/// verifies its file in this transaction's group folder
/// `attachments/tmp/txn-<uuid>.pending/` (a streaming writer's file is moved there at its
/// finish), and starts its writeback (sync_file_range) without waiting for it:
/// the transaction's own thread can read, attach and verify it at once (BlobStore looks
/// here first), nobody else sees it. Store.commit calls `install()` BEFORE SQLite's
/// COMMIT: the files are made durable (their writeback started at put time), then each
/// is renamed to its digest's name, then the attachments folder is fsync'ed once.
///
/// Making them durable: a few files (fewer than `syncfsThreshold`) are fdatasync'ed one
/// by one. Every fdatasync ends with a flush of the disk's write cache, which on a busy
/// disk costs milliseconds even when the data is written already (measured: 1,000
/// fdatasyncs of files written back 2.1–3.1 s under load, 65 ms idle). So from
/// `syncfsThreshold` files on, one syncfs() of the file system makes them all durable
/// with one flush (81–356 ms for the same 1,000 files under the same load): it also
/// writes back other dirty files of that file system, which is the price of the single
/// flush. syncfs reports the file system's write-back errors (Linux 5.8+: those since the
/// group folder was opened, and earlier ones nobody was told of yet); an error fails the
/// commit. So:
///
/// - a name `<digest>.blob` only ever appears for a file whose bytes are synced: after a
///   crash or power loss at any moment, a file under a digest's name is complete, and a
///   later put of the same content may trust it (it is never re-verified);
/// - a committed document never names content that a crash could lose or tear: its
///   COMMIT reaches the WAL only after the files and the folder entries are durable; if
///   the install fails, the commit fails and the transaction is rolled back;
/// - a crash before the commit leaves the group folder in tmp/, which nobody looks up;
///   the next open or compaction deletes it (the live transaction holds a lock on it,
///   as live writers do on their temporary files);
/// - a rollback (abort, or a failed commit) deletes the folder: nothing is installed.
///
/// Used only by the thread that owns the transaction (the Store's write lock).
final class PendingBlobs {
    struct Entry {
        let pendingPath: String
        let targetPath: String
    }

    /// `attachments/tmp/txn-<uuid>.pending`
    let groupDirectory: String
    private let attachmentsDirectory: String
    private var lockFD: Int32 = -1
    private var entries: [BlobDigest: Entry] = [:]
    private var order: [BlobDigest] = []

    var count: Int { entries.count }

    /// Creates the group folder and takes its lock.
    init(store: BlobStore) throws {
        attachmentsDirectory = store.directory
        try store.ensureDirectories()
        while true {
            let dir = store.tempDirectory + "/txn-" + FileSystem.uuid() + PendingBlobs.suffix
            guard FaultPoint.call(.create, { mkdir(dir, 0o755) }) == 0 else {
                throw FileSystem.writeFailure("cannot create \(dir)")
            }
            let fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else {
                let message = FileSystem.errnoMessage()
                rmdir(dir)
                throw CBLError.internalError("cannot open \(dir): \(message)")
            }
            // The lock tells clean-up (open, compaction, in any process) that the folder
            // is in use. Between mkdir and flock a clean-up may have taken it for a
            // leftover and removed it: then start again with a new one.
            var st = stat()
            if flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0 {
                groupDirectory = dir
                lockFD = fd
                return
            }
            close(fd)
        }
    }

    deinit { discard() }

    static let suffix = ".pending"

    /// From this many files on, the commit makes them durable with one syncfs() instead of
    /// one fdatasync each (see the type's comment). Tests change it.
    nonisolated(unsafe) static var syncfsThreshold = 16

    /// Where the transaction's own copy of `digest` is, when it put it.
    func path(for digest: BlobDigest) -> String? { entries[digest]?.pendingPath }

    func contains(_ digest: BlobDigest) -> Bool { entries[digest] != nil }

    /// A new file's path in the group folder (BlobStore.put writes there directly).
    func newTemporaryPath() -> String { groupDirectory + "/" + FileSystem.uuid() + ".tmp" }

    /// Takes over the complete, verified (not yet synced) file at `tempPath`, whose
    /// content is `digest`, to be installed at `targetPath` by `install()`. A file
    /// elsewhere (a streaming writer's, in tmp/) is moved into the group folder.
    func adopt(tempPath: String, digest: BlobDigest, targetPath: String) throws {
        precondition(entries[digest] == nil, "content already pending")
        var pending = tempPath
        if !tempPath.hasPrefix(groupDirectory + "/") {
            pending = newTemporaryPath()
            try FileSystem.rename(tempPath, pending)
        }
        entries[digest] = Entry(pendingPath: pending, targetPath: targetPath)
        order.append(digest)
    }

    /// Makes every pending file durable under its digest's name (see the type's comment):
    /// fdatasync each (from `syncfsThreshold` files on, one syncfs instead), rename each,
    /// fsync the attachments folder once. Called by the
    /// commit before SQLite's COMMIT; throws (and the commit rolls back) on any failure.
    /// Files already renamed when a later step fails stay installed: complete and synced,
    /// they are orphans that compaction deletes.
    func install() throws {
        guard !order.isEmpty else { discard(); return }
        // Each file's writeback started at its put, so by now most of the data is on
        // disk and these syncs mostly wait for the rest, for the metadata, and the flush.
        if order.count >= PendingBlobs.syncfsThreshold && BlobDurability.canSyncFileSystem {
            try BlobDurability.syncFileSystem(lockFD, path: groupDirectory)
        } else {
            for digest in order {
                let path = entries[digest]!.pendingPath
                try BlobDurability.withFile(path) { fd in try BlobDurability.dataSync(fd, path: path) }
            }
        }
        for digest in order {
            let e = entries[digest]!
            try BlobDurability.rename(e.pendingPath, e.targetPath)
        }
        try BlobDurability.syncDirectory(attachmentsDirectory)
        Loggers.storage.debug("installed \(order.count) attachment file(s) put in the transaction")
        entries.removeAll()
        order.removeAll()
        discard()
    }

    /// Deletes the group folder and whatever it still holds (a rollback), and releases
    /// its lock. Harmless when already done.
    func discard() {
        guard lockFD >= 0 else { return }
        try? FileSystem.remove(groupDirectory)
        close(lockFD)
        lockFD = -1
        entries.removeAll()
        order.removeAll()
    }
}
