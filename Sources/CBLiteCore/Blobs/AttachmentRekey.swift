/// Re-encrypting attachments when a database's key changes (or encryption is added or
/// removed). Every referenced file is re-encoded under the new key into
/// `attachments.rekey/`, which is marked complete with a check value of the new key;
/// then the database file is swapped; then the folders are swapped. A crash between the
/// two swaps is finished on the next open: the marker tells which key the staged files
/// belong to, and the staged folder replaces the old one only when that is the key the
/// database now opens with (otherwise the database swap never happened and the staging is
/// dropped).
enum AttachmentRekey {
    static let marker = "REKEY-COMPLETE"

    static func attachments(_ bundle: String) -> String { bundle + "/attachments" }
    static func staging(_ bundle: String) -> String { bundle + "/attachments.rekey" }

    static func checkValue(_ key: EncryptionKey?) -> String {
        guard let key else { return "plain" }
        let mac = HMACSHA256.authenticationCode(Array("cblite rekey check".utf8), key: key.derivationSecret)
        return mac.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Under the database's exclusive lock, before the database file is swapped.
    static func stage(bundle: String, from oldKey: EncryptionKey?, to newKey: EncryptionKey?, _ conn: Connection) throws {
        let old = BlobStore(directory: attachments(bundle), key: oldKey)
        try? FileSystem.remove(staging(bundle))
        guard FileSystem.isDirectory(old.directory) else { return }
        let new = BlobStore(directory: staging(bundle), key: newKey)
        try new.ensureDirectories()
        for digest in try Database.referencedDigests(conn) where old.contains(digest) {
            let reader = try old.openReader(digest)
            defer { reader.close() }
            let writer = try new.makeWriter(expected: digest)
            do {
                while true {
                    let chunk = try reader.read(max: 64 * 1024)
                    if chunk.isEmpty { break }
                    try writer.write(chunk)
                }
                _ = try writer.finish()
            } catch {
                writer.cancel()
                throw error
            }
        }
        try? FileSystem.remove(new.tempDirectory)
        try writeMarker(staging(bundle) + "/" + marker, checkValue(newKey))
    }

    /// After the database file was swapped: the staged folder becomes the store.
    static func finish(bundle: String, key: EncryptionKey?) throws {
        guard FileSystem.exists(staging(bundle) + "/" + marker) else { return }
        let retired = bundle + "/attachments.old-" + FileSystem.uuid()
        if FileSystem.exists(attachments(bundle)) { try FileSystem.rename(attachments(bundle), retired) }
        try FileSystem.rename(staging(bundle), attachments(bundle))
        try? FileSystem.remove(attachments(bundle) + "/" + marker)
        try? FileSystem.remove(retired)
    }

    /// On open: completes or drops a re-encryption a crash interrupted.
    static func recover(bundle: String, key: EncryptionKey?) {
        for name in (try? FileSystem.list(bundle)) ?? [] where name.hasPrefix("attachments.old-") {
            try? FileSystem.remove(bundle + "/" + name)
        }
        guard FileSystem.isDirectory(staging(bundle)) else { return }
        if readMarker(staging(bundle) + "/" + marker) == checkValue(key) {
            try? finish(bundle: bundle, key: key)
        } else {
            try? FileSystem.remove(staging(bundle))
        }
    }

    private static func writeMarker(_ path: String, _ text: String) throws {
        let f = try BlobFile.create(path)
        try Array(text.utf8).withUnsafeBytes { try f.append($0) }
        try f.sync()
    }

    private static func readMarker(_ path: String) -> String? {
        guard let f = try? BlobFile.openForReading(path, what: "marker") else { return nil }
        var buf = [UInt8](repeating: 0, count: 128)
        guard let n = try? buf.withUnsafeMutableBytes({ try f.read(at: 0, into: $0) }) else { return nil }
        return String(decoding: buf[0..<n], as: UTF8.self)
    }
}
