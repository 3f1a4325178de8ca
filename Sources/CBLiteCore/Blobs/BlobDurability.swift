import Glibc

/// The durability primitives of the attachment store, with a hook that tests use to see
/// (and fail) each step.
enum BlobDurability {
    enum Event: Equatable, Sendable {
        /// writeback of a file started (no wait)
        case writeback(String)
        /// fsync/fdatasync of a file
        case fileSync(String)
        case rename(from: String, to: String)
        /// fsync of a folder
        case directorySync(String)
        /// syncfs of the file system holding this path
        case fileSystemSync(String)
    }

    /// Called before each step; a throw makes the step fail as an I/O error would.
    nonisolated(unsafe) static var testHook: ((Event) throws -> Void)?

    /// Opens `path` read-only for a sync (fsync/fdatasync work on any descriptor of the file).
    static func withFile<T>(_ path: String, _ body: (Int32) throws -> T) throws -> T {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CBLError.internalError("cannot open \(path) to sync it: \(FileSystem.errnoMessage())") }
        defer { close(fd) }
        return try body(fd)
    }

    /// Starts writing the file's dirty pages to disk without waiting (Linux
    /// sync_file_range(SYNC_FILE_RANGE_WRITE)); a hint only: without it the later sync
    /// does all the work.
    static func startWriteback(_ fd: Int32, path: String) {
        try? testHook?(.writeback(path))
        if let f = syncFileRange { _ = f(fd, 0, 0, 2 /* SYNC_FILE_RANGE_WRITE */) }
    }

    /// fdatasync: the file's bytes and what is needed to read them (its size, its blocks).
    static func dataSync(_ fd: Int32, path: String) throws {
        try testHook?(.fileSync(path))
        try retryingInterrupts("fdatasync", path) { FaultPoint.call(.sync) { fdatasync(fd) } }
    }

    /// fsync: the file's bytes and all its metadata.
    static func fullSync(_ fd: Int32, path: String) throws {
        try testHook?(.fileSync(path))
        try retryingInterrupts("fsync", path) { FaultPoint.call(.sync) { fsync(fd) } }
    }

    static func rename(_ from: String, _ to: String) throws {
        try testHook?(.rename(from: from, to: to))
        try FileSystem.rename(from, to)
    }

    /// fsync of a folder, so that renames into it are durable.
    static func syncDirectory(_ path: String) throws {
        try testHook?(.directorySync(path))
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw CBLError.internalError("cannot open \(path) to sync it: \(FileSystem.errnoMessage())") }
        defer { close(fd) }
        try retryingInterrupts("fsync", path) { FaultPoint.call(.sync) { fsync(fd) } }
    }

    /// Whether syncfs() is available (Linux, glibc 2.14+).
    static var canSyncFileSystem: Bool { syncfsFunction != nil }

    /// syncfs(): every dirty file of the file system holding `fd` written and its metadata
    /// too, then one flush of the disk's cache. Fails with the write-back errors the file
    /// system had since `fd` was opened.
    static func syncFileSystem(_ fd: Int32, path: String) throws {
        try testHook?(.fileSystemSync(path))
        guard let f = syncfsFunction else { throw CBLError.internalError("syncfs is not available") }
        try retryingInterrupts("syncfs", path) { FaultPoint.call(.sync) { f(fd) } }
    }

    /// Runs a sync call again when a signal interrupted it; any other failure is a 500
    /// (507 for ENOSPC: a file system that allocates at write-back, NFS).
    private static func retryingInterrupts(_ name: String, _ path: String, _ call: () -> Int32) throws {
        while call() != 0 {
            if errno == EINTR { continue }
            throw FileSystem.writeFailure("\(name) failed on \(path)")
        }
    }

    private typealias SyncFS = @convention(c) (Int32) -> Int32
    private static let syncfsFunction: SyncFS? = {
        guard let sym = dlsym(nil, "syncfs") else { return nil }   // nil: RTLD_DEFAULT
        return unsafeBitCast(sym, to: SyncFS.self)
    }()

    /// glibc's sync_file_range (Linux), which the Glibc module does not import.
    private typealias SyncFileRange = @convention(c) (Int32, Int64, Int64, UInt32) -> Int32
    private static let syncFileRange: SyncFileRange? = {
        guard let sym = dlsym(nil, "sync_file_range") else { return nil }   // nil: RTLD_DEFAULT
        return unsafeBitCast(sym, to: SyncFileRange.self)
    }()
}
