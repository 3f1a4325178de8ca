import Glibc

/// The default connection limit, from the process's file-descriptor limit: each
/// connection holds one descriptor, and the databases, their WAL files and attachment
/// files being written need the rest.
public enum ConnectionLimit {
    /// At most this many by default (each allowed connection may also hold a worker thread).
    static let ceiling = 4096
    static let floor = 32

    /// A quarter of the descriptors (at least 128) are left for everything else.
    public static func defaultMaxConnections() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 256 }
        return forDescriptorLimit(UInt64(limit.rlim_cur))      // RLIM_INFINITY is UInt64.max: the ceiling
    }

    static func forDescriptorLimit(_ descriptors: UInt64) -> Int {
        let n = Int(clamping: descriptors)
        let reserve = max(128, n / 4)
        return min(ceiling, max(floor, n - reserve))
    }
}
