import CBLiteCore
import Glibc

/// The few file operations the listener needs (the TLS identity), without Foundation.
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
}
