import CBLiteBase
import CouchWire

/// Attachments kept in memory by digest: what the wire format's readers stream into in
/// these tests, in place of the engine's store (CouchWire does no storage I/O).
final class MemoryAttachmentStore {
    private(set) var blobs: [BlobDigest: [UInt8]] = [:]

    func makeWriter() -> any AttachmentSink { Writer(self) }

    private final class Writer: AttachmentSink {
        private let store: MemoryAttachmentStore
        private var bytes: [UInt8] = []
        private var hasher = BlobHasher()

        init(_ store: MemoryAttachmentStore) { self.store = store }

        var length: UInt64 { UInt64(bytes.count) }

        func write(_ more: [UInt8]) throws {
            bytes += more
            hasher.update(more)
        }

        func finish() throws -> BlobInfo {
            let digest = hasher.digest
            store.blobs[digest] = bytes
            return BlobInfo(digest: digest, length: length)
        }

        func cancel() { bytes = [] }
    }
}
