import Glibc

/// The few file operations the engine needs, on POSIX calls (no Foundation).
enum FileSystem {
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// The file's size in bytes, -1 when it does not exist.
    static func fileSize(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : -1
    }

    static func errnoMessage() -> String { String(cString: strerror(errno)) }

    /// ENOSPC or EDQUOT: the disk, or the user's quota, is full.
    static func isOutOfSpace(_ code: Int32) -> Bool { code == ENOSPC || code == EDQUOT }

    /// The error of a write, sync, rename or mkdir that just failed (errno set): 507 when
    /// the disk is full (the caller may retry once space is freed), 403 when the folder or
    /// file system became read-only (as SQLite's SQLITE_READONLY), else 500.
    static func writeFailure(_ what: String) -> CBLError {
        let code = errno
        let message = "\(what): \(String(cString: strerror(code)))"
        if isOutOfSpace(code) { return CBLError(.insufficientStorage, "disk full: " + message) }
        if code == EROFS || code == EACCES || code == EPERM { return CBLError(.forbidden, "read-only: " + message) }
        return .internalError(message)
    }

    /// mkdir -p.
    static func createDirectory(_ path: String) throws {
        if isDirectory(path) { return }
        // Each prefix that ends a component, split on '/' bytes as the kernel does (a split
        // into Characters would page in grapheme breaking on every open).
        let slash = UInt8(ascii: "/")
        let bytes = Array(path.utf8)
        for end in stride(from: 1, through: bytes.count, by: 1)
        where bytes[end - 1] != slash && (end == bytes.count || bytes[end] == slash) {
            let prefix = String(decoding: bytes[..<end], as: UTF8.self)
            if !isDirectory(prefix) && FaultPoint.call(.create, { mkdir(prefix, 0o755) }) != 0 && errno != EEXIST {
                throw writeFailure("cannot create directory \(prefix)")
            }
        }
    }

    static func realPath(_ path: String) throws -> String {
        guard let p = realpath(path, nil) else {
            throw CBLError.internalError("cannot resolve \(path): \(errnoMessage())")
        }
        defer { free(p) }
        return String(cString: p)
    }

    static func list(_ path: String) throws -> [String] {
        guard let d = opendir(path) else {
            if errno == ENOENT { return [] }
            throw CBLError.internalError("cannot list \(path): \(errnoMessage())")
        }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let name = withUnsafePointer(to: e.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { out.append(name) }
        }
        return out
    }

    /// rm -rf.
    static func remove(_ path: String) throws {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            for child in try list(path) { try remove(path + "/" + child) }
            guard rmdir(path) == 0 else { throw CBLError.internalError("cannot remove \(path): \(errnoMessage())") }
        } else {
            guard unlink(path) == 0 else { throw CBLError.internalError("cannot remove \(path): \(errnoMessage())") }
        }
    }

    /// cp -R of regular files and directories (symlinks are not followed).
    static func copyTree(_ from: String, _ to: String) throws {
        var st = stat()
        guard lstat(from, &st) == 0 else { throw CBLError.notFound("\(from) does not exist") }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            guard mkdir(to, 0o755) == 0 else { throw CBLError.internalError("cannot create \(to): \(errnoMessage())") }
            for child in try list(from) { try copyTree(from + "/" + child, to + "/" + child) }
        } else if (st.st_mode & S_IFMT) == S_IFREG {
            try copyFile(from, to)
        }
    }

    static func copyFile(_ from: String, _ to: String) throws {
        let src = open(from, O_RDONLY)
        guard src >= 0 else { throw CBLError.internalError("cannot read \(from): \(errnoMessage())") }
        defer { close(src) }
        let dst = open(to, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard dst >= 0 else { throw CBLError.internalError("cannot create \(to): \(errnoMessage())") }
        defer { close(dst) }
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buf.withUnsafeMutableBytes { read(src, $0.baseAddress, $0.count) }
            if n == 0 { break }
            guard n > 0 else { throw CBLError.internalError("read error on \(from): \(errnoMessage())") }
            var off = 0
            while off < n {
                let w = buf.withUnsafeBytes { write(dst, $0.baseAddress! + off, n - off) }
                guard w > 0 else { throw writeFailure("write error on \(to)") }
                off += w
            }
        }
        guard fsync(dst) == 0 else { throw writeFailure("fsync failed on \(to)") }
    }

    static func rename(_ from: String, _ to: String) throws {
        guard FaultPoint.call(.rename, { Glibc.rename(from, to) }) == 0 else {
            throw writeFailure("cannot rename \(from) to \(to)")
        }
    }

    static func uuid() -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        var filled = 0
        while filled < 16 {
            let n = bytes.withUnsafeMutableBytes { getentropy($0.baseAddress! + filled, 16 - filled) == 0 ? 16 - filled : -1 }
            if n > 0 { filled += n }
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return [bytes[0..<4], bytes[4..<6], bytes[6..<8], bytes[8..<10], bytes[10...]].map { Hex.encode($0) }.joined(separator: "-")
    }
}
