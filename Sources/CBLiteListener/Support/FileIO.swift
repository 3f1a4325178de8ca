import CBLiteCore
import Glibc

/// The few file operations the listener needs (the TLS identity, the saved configuration),
/// without Foundation.
enum FileIO {
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Writes to a temporary file then renames it, so a crash never leaves half a key.
    static func writeAtomically(_ path: String, _ bytes: [UInt8], mode: mode_t) throws {
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw CBLError(.internalError, "cannot create \(tmp): errno \(errno)") }
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; close(fd); throw CBLError(.internalError, "cannot write \(tmp): errno \(errno)") }
            off += n
        }
        fsync(fd)
        close(fd)
        guard rename(tmp, path) == 0 else { throw CBLError(.internalError, "cannot rename \(tmp): errno \(errno)") }
    }

    /// A small file's bytes (the saved configuration).
    static func readAll(_ path: String, limit: Int = 1 << 20) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CBLError(.internalError, "cannot open \(path): errno \(errno)") }
        defer { close(fd) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw CBLError(.internalError, "cannot read \(path): errno \(errno)") }
            if n == 0 { return out }
            out += buf[0..<n]
            guard out.count <= limit else { throw CBLError(.badRequest, "\(path) is larger than \(limit) bytes") }
        }
    }
}
