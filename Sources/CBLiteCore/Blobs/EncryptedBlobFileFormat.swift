import Glibc

/// Attachment files of an encrypted database: AES-256-GCM in 64 KiB chunks, so reads at
/// any offset decrypt one chunk and memory stays constant whatever the size.
///
/// File: header = "CBLE", version 1, 3 zero bytes, chunk size (UInt32 LE), 16-byte random
/// salt; then chunks, each ciphertext + 16-byte tag. The file's key is HKDF-SHA256 of the
/// database's key material with the salt, so no two files share a key; the nonce is the
/// chunk index; the additional data binds the index and a "last chunk" flag, so chunks
/// cannot be reordered, dropped or the file truncated without failing authentication.
/// An empty attachment is one empty, authenticated last chunk.
struct EncryptedBlobFileFormat: BlobFileFormat {
    static let magic: [UInt8] = Array("CBLE".utf8)
    static let headerSize = 28
    static let tagSize = 16
    let chunkSize: Int
    private let secret: [UInt8]
    private let namingKey: [UInt8]

    init(key: EncryptionKey, chunkSize: Int = 64 * 1024) {
        secret = key.derivationSecret
        namingKey = HKDFSHA256.deriveKey(inputKeyMaterial: secret, info: Array("cblite attachment names v1".utf8),
                                         outputByteCount: 32)
        self.chunkSize = chunkSize
    }

    /// File names: HMAC-SHA256 of the digest under a key derived from the database key, so
    /// a name reveals nothing about the content to someone without the key, while equal
    /// content still maps to one file (de-duplication).
    func fileName(forDigest digest: BlobDigest) -> String {
        let mac = HMACSHA256.authenticationCode(Array(digest.hex.utf8), key: namingKey)
        return mac.map { String($0, radix: 16).leftPadded(to: 2) }.joined() + ".blob"
    }

    fileprivate func fileKey(salt: [UInt8]) -> [UInt8] {
        HKDFSHA256.deriveKey(inputKeyMaterial: secret, salt: salt, info: Array("cblite attachment chunks v1".utf8),
                             outputByteCount: 32)
    }

    /// 12 bytes: 4 zero bytes, then the chunk index big-endian.
    fileprivate static func nonce(_ index: UInt64) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { bytes[4 + i] = UInt8(truncatingIfNeeded: index >> (8 * (7 - i))) }
        return bytes
    }

    fileprivate static func aad(_ index: UInt64, last: Bool) -> [UInt8] {
        var bytes = Array("cblite-chunk".utf8)
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: index >> (8 * (7 - i)))) }
        bytes.append(last ? 1 : 0)
        return bytes
    }

    func makeEncoder(for file: BlobFile) throws -> any BlobFileEncoder {
        let salt = try secureRandomBytes(16)
        var header = EncryptedBlobFileFormat.magic + [1, 0, 0, 0]
        for i in 0..<4 { header.append(UInt8(truncatingIfNeeded: UInt32(chunkSize) >> (8 * i))) }
        header += salt
        try header.withUnsafeBytes { try file.append($0) }
        return Encoder(file: file, key: fileKey(salt: salt), chunkSize: chunkSize)
    }

    /// Chunks of ciphertext: a file just written is read back and hashed (BlobWriter).
    var storesPlaintext: Bool { false }

    /// Header, then the content in chunks of `chunkSize`, each with its tag; the last chunk
    /// is never full (content of a multiple of the chunk size ends with an empty one).
    func fileSize(forLength length: UInt64) -> UInt64 {
        let chunks = length / UInt64(chunkSize) + 1
        return UInt64(EncryptedBlobFileFormat.headerSize) + length + chunks * UInt64(EncryptedBlobFileFormat.tagSize)
    }

    func makeDecoder(for file: BlobFile) throws -> any BlobFileDecoder {
        var header = [UInt8](repeating: 0, count: EncryptedBlobFileFormat.headerSize)
        let n = try header.withUnsafeMutableBytes { try file.read(at: 0, into: $0) }
        guard n == header.count, Array(header[0..<4]) == EncryptedBlobFileFormat.magic, header[4] == 1 else {
            throw CBLError(.unauthorized, "attachment file is not encrypted with this database's format")
        }
        var size = 0
        for i in 0..<4 { size |= Int(header[8 + i]) << (8 * i) }
        guard size > 0 && size <= 16 << 20 else { throw CBLError.internalError("corrupt attachment file header") }
        let body = Int64(try file.size()) - Int64(EncryptedBlobFileFormat.headerSize)
        let stride = Int64(size + EncryptedBlobFileFormat.tagSize)
        guard body >= Int64(EncryptedBlobFileFormat.tagSize) else { throw CBLError.internalError("truncated attachment file") }
        let chunks = (body + stride - 1) / stride
        let lastCipher = body - (chunks - 1) * stride - Int64(EncryptedBlobFileFormat.tagSize)
        guard lastCipher >= 0 else { throw CBLError.internalError("truncated attachment file") }
        let length = UInt64((chunks - 1) * Int64(size) + lastCipher)
        let decoder = Decoder(file: file, key: fileKey(salt: Array(header[12..<28])), chunkSize: size,
                              chunks: UInt64(chunks), length: length)
        // Authenticating the last chunk now detects a truncated file (or a wrong key)
        // before any read, even one that would not reach the end.
        _ = try decoder.chunk(UInt64(chunks - 1))
        return decoder
    }

    private final class Encoder: BlobFileEncoder {
        let file: BlobFile
        let key: [UInt8]
        let chunkSize: Int
        var pending: [UInt8] = []
        var index: UInt64 = 0

        init(file: BlobFile, key: [UInt8], chunkSize: Int) {
            self.file = file
            self.key = key
            self.chunkSize = chunkSize
            pending.reserveCapacity(chunkSize)
        }

        func write(_ bytes: UnsafeRawBufferPointer) throws {
            var offset = 0
            while offset < bytes.count {
                let take = min(chunkSize - pending.count, bytes.count - offset)
                pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + take]))
                offset += take
                // A full chunk is written only once more data follows: the last chunk,
                // full or not, must carry the "last" flag.
                if pending.count == chunkSize && offset < bytes.count { try seal(last: false) }
            }
        }

        func finish() throws {
            if pending.count == chunkSize { try seal(last: false) }
            try seal(last: true)
        }

        private func seal(last: Bool) throws {
            let box = try AESGCM.seal(pending, key: key, nonce: EncryptedBlobFileFormat.nonce(index),
                                      authenticating: EncryptedBlobFileFormat.aad(index, last: last))
            let out = box.ciphertext + box.tag
            try out.withUnsafeBytes { try file.append($0) }
            pending.removeAll(keepingCapacity: true)
            index += 1
        }
    }

    private final class Decoder: BlobFileDecoder {
        let file: BlobFile
        let key: [UInt8]
        let chunkSize: Int
        let chunks: UInt64
        let length: UInt64
        private var cachedIndex: UInt64 = .max
        private var cached: [UInt8] = []

        init(file: BlobFile, key: [UInt8], chunkSize: Int, chunks: UInt64, length: UInt64) {
            self.file = file
            self.key = key
            self.chunkSize = chunkSize
            self.chunks = chunks
            self.length = length
        }

        func chunk(_ index: UInt64) throws -> [UInt8] {
            if index == cachedIndex { return cached }
            let stride = UInt64(chunkSize + EncryptedBlobFileFormat.tagSize)
            let start = UInt64(EncryptedBlobFileFormat.headerSize) + index * stride
            var raw = [UInt8](repeating: 0, count: Int(stride))
            let n = try raw.withUnsafeMutableBytes { try file.read(at: start, into: $0) }
            guard n >= EncryptedBlobFileFormat.tagSize else { throw CBLError.internalError("truncated attachment file") }
            let last = index == chunks - 1
            let cipherLength = n - EncryptedBlobFileFormat.tagSize
            let plain = raw.withUnsafeBytes { r in
                AESGCM.open(UnsafeRawBufferPointer(rebasing: r[0..<cipherLength]),
                            tag: UnsafeRawBufferPointer(rebasing: r[cipherLength..<n]),
                            key: key, nonce: EncryptedBlobFileFormat.nonce(index),
                            authenticating: EncryptedBlobFileFormat.aad(index, last: last))
            }
            guard let plain else {
                throw CBLError.internalError("attachment file failed authentication (wrong key, or damaged)")
            }
            cached = plain
            cachedIndex = index
            return cached
        }

        func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            guard offset < length, buffer.count > 0 else { return 0 }
            var done = 0
            var pos = offset
            while done < buffer.count && pos < length {
                let index = pos / UInt64(chunkSize)
                let within = Int(pos % UInt64(chunkSize))
                let plain = try chunk(index)
                let take = min(plain.count - within, buffer.count - done)
                guard take > 0 else { break }
                plain.withUnsafeBytes { src in
                    (buffer.baseAddress! + done).copyMemory(from: src.baseAddress! + within, byteCount: take)
                }
                done += take
                pos += UInt64(take)
            }
            return done
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
