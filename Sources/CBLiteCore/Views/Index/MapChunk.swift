import Glibc

/// A chunk of documents read for mapping: per document its sequence, whether it is
/// mapped, and ranges of one buffer holding its ID, revision ID and JSON (followed by a
/// 0 byte) — rendered straight from the columns, with no allocation per document.
///
/// The buffer is raw memory grown by doubling, written through a pointer: appending to
/// an array cost ~150 instructions a call (its capacity and uniqueness checks), five
/// calls a document, where the bytes themselves are a few short copies.
final class MapChunk {
    struct Entry {
        let sequence: Int64
        /// Not deleted and not a design document: CouchDB's views never see those.
        let mapped: Bool
        let id: Range<Int>, rev: Range<Int>, json: Range<Int>
    }

    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var count = 0
    private(set) var entries: [Entry] = []

    private init(capacity: Int) {
        self.capacity = capacity
        guard let p = malloc(capacity) else { fatalError("out of memory reading documents to map") }
        base = p.assumingMemoryBound(to: UInt8.self)
    }

    deinit { free(base) }

    /// The bytes of a range of the buffer (valid while the chunk lives).
    func bytes(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: base + range.lowerBound, count: range.count)
    }

    /// Where `n` more bytes go (the buffer grown first when needed).
    private func reserve(_ n: Int) -> UnsafeMutablePointer<UInt8> {
        if count + n > capacity {
            var c = capacity * 2
            while c < count + n { c *= 2 }
            guard let p = realloc(base, c) else { fatalError("out of memory reading documents to map") }
            base = p.assumingMemoryBound(to: UInt8.self)
            capacity = c
        }
        return base + count
    }

    private func append(_ b: UnsafeBufferPointer<UInt8>) -> Range<Int> {
        let start = count
        if let src = b.baseAddress { reserve(b.count).update(from: src, count: b.count) }
        count += b.count
        return start..<count
    }

    private func appendByte(_ c: UInt8) {
        reserve(1).pointee = c
        count += 1
    }

    /// Reads up to `limit` documents with sequences in (from, to], into `spare`'s memory
    /// when given (a chunk no one else holds: one buffer serves a whole update, where a
    /// buffer a chunk, grown by realloc, left ~0.4 MiB more of the heap resident at the
    /// build's peak).
    static func read(_ conn: Connection, docStore: DocumentStore, from: Int64, to: Int64, limit: Int,
                     reusing spare: MapChunk? = nil) throws -> MapChunk {
        let s = try docStore.sequenceRange(conn, after: from, through: to, limit: Int64(limit))
        defer { s.reset() }
        let chunk: MapChunk
        if let spare {
            chunk = spare
            chunk.count = 0
            chunk.entries.removeAll(keepingCapacity: true)
        } else {
            chunk = MapChunk(capacity: 128 * 1024)
            chunk.entries.reserveCapacity(limit)
        }
        let none = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        while try s.step() {
            // The ID and revision are never empty; an unmapped document's body is not read.
            let id = s.borrowedNonEmpty(0) ?? none, rev = s.borrowedNonEmpty(3) ?? none
            let mapped = !DocFlags(rawValue: s.int(2)).contains(.deleted) && !DocumentBody.isDesignDocID(id)
            let idRange = chunk.append(id), revRange = chunk.append(rev)
            var json = chunk.count..<chunk.count
            if mapped {
                let body = s.borrowedBytes(4)
                if let n = DocumentJSON.plainLength(docID: id, rev: rev, deleted: false, body: body) {
                    DocumentJSON.writePlain(at: chunk.reserve(n), docID: id, rev: rev, deleted: false, body: body)
                    chunk.count += n
                    json = json.lowerBound..<chunk.count
                } else {
                    var w = JSONWriter(canonical: false, capacity: (body?.count ?? 2) + id.count + rev.count + 64)
                    DocumentJSON.write(into: &w, docID: id, rev: rev, deleted: false, body: body)
                    json = w.bytes.withUnsafeBufferPointer { chunk.append($0) }
                }
            }
            chunk.appendByte(0)
            chunk.entries.append(Entry(sequence: s.int(1), mapped: mapped, id: idRange, rev: revRange, json: json))
        }
        return chunk
    }
}
