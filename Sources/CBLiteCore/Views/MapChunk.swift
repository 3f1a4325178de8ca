/// A chunk of documents read for mapping: per document its sequence, whether it is
/// deleted, and ranges of one buffer holding its ID, revision ID and JSON (followed by a
/// 0 byte) — rendered straight from the columns, with no allocation per document.
final class MapChunk {
    struct Entry {
        let sequence: Int64
        let deleted: Bool
        let id: Range<Int>, rev: Range<Int>, json: Range<Int>
    }

    let bytes: [UInt8]
    let entries: [Entry]

    private init(bytes: [UInt8], entries: [Entry]) {
        self.bytes = bytes
        self.entries = entries
    }

    /// Reads up to `limit` documents with sequences in (from, to].
    static func read(_ conn: Connection, docStore: DocumentStore, from: Int64, to: Int64, limit: Int) throws -> MapChunk {
        let s = try docStore.sequenceRange(conn, after: from, through: to, limit: Int64(limit))
        defer { s.reset() }
        var w = JSONWriter(canonical: false, capacity: 64 * 1024)
        var entries: [Entry] = []
        entries.reserveCapacity(limit)
        let none = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        while try s.step() {
            let id = s.borrowedBytes(0) ?? none, rev = s.borrowedBytes(3) ?? none
            let deleted = DocFlags(rawValue: s.int(2)).contains(.deleted)
            let idStart = w.bytes.count
            w.appendRaw(id)
            let revStart = w.bytes.count
            w.appendRaw(rev)
            let jsonStart = w.bytes.count
            if !deleted { DocumentJSON.write(into: &w, docID: id, rev: rev, deleted: false, body: s.borrowedBytes(4)) }
            let jsonEnd = w.bytes.count
            w.appendByte(0)
            entries.append(Entry(sequence: s.int(1), deleted: deleted, id: idStart..<revStart, rev: revStart..<jsonStart,
                                 json: jsonStart..<jsonEnd))
        }
        return MapChunk(bytes: w.bytes, entries: entries)
    }
}
