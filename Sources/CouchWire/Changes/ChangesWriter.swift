import CBLiteBase

/// The `_changes` feed's JSON as CouchDB writes it. Sequences are numbers (CouchDB's
/// own are opaque strings; clients pass them back verbatim, so either works).
public enum ChangesWriter {
    /// `{"seq":N,"id":"..","changes":[{"rev":".."}],"deleted":true,"doc":{..}}`.
    public static func row(_ r: ChangeEntry) -> [UInt8] {
        var w = JSONWriter(canonical: false, capacity: 128 + (r.doc?.count ?? 0))
        var id = r.docID
        id.withUTF8 { writeRow(into: &w, seq: r.sequence, id: $0, rev: nil, leaves: r.revs, deleted: r.deleted, doc: r.doc) }
        return w.bytes
    }

    /// One row written in place: the revisions are `leaves` when given, else `rev`. Every
    /// `_changes` row, over HTTP and through the C ABI, is written here.
    public static func writeRow(into w: inout JSONWriter, seq: Int64, id: UnsafeBufferPointer<UInt8>,
                                rev: UnsafeBufferPointer<UInt8>?, leaves: [String]?, deleted: Bool, doc: [UInt8]?) {
        w.append("{\"seq\":")
        w.appendInt(seq)
        w.append(",\"id\":")
        w.writeString(utf8: id)
        w.append(",\"changes\":[")
        if let leaves {
            for (i, leaf) in leaves.enumerated() {
                w.append(i == 0 ? "{\"rev\":" : ",{\"rev\":")
                w.writeString(leaf)
                w.appendByte(UInt8(ascii: "}"))
            }
        } else if let rev {
            w.append("{\"rev\":")
            w.writeString(utf8: rev)
            w.appendByte(UInt8(ascii: "}"))
        }
        w.appendByte(UInt8(ascii: "]"))
        if deleted { w.append(",\"deleted\":true") }
        if let doc { w.append(",\"doc\":"); w.appendRaw(doc) }
        w.appendByte(UInt8(ascii: "}"))
    }

    /// The feed as one JSON document, `{"results":[row,...],"last_seq":n}` (the C ABI's
    /// `cbl_collection_changes`, the tool's `changes --json`), written row by row.
    public struct Document {
        private var w = JSONWriter(canonical: false, capacity: 4096)
        private var empty = true

        public init() { w.append("{\"results\":[") }

        public mutating func add(_ r: ChangeRowView) {
            if !empty { w.appendByte(UInt8(ascii: ",")) }
            empty = false
            ChangesWriter.writeRow(into: &w, seq: r.sequence, id: r.docID, rev: r.revID, leaves: r.leaves, deleted: r.deleted, doc: r.doc)
        }

        public mutating func finish(lastSeq: Int64) -> [UInt8] {
            w.append("],\"last_seq\":")
            w.appendInt(lastSeq)
            w.appendByte(UInt8(ascii: "}"))
            return w.bytes
        }
    }

    // MARK: feed=normal and longpoll: one JSON object, written in pieces

    public static let normalHeader = Array("{\"results\":[\n".utf8)
    /// Between rows (CouchDB puts ",\r\n" there).
    public static let normalSeparator = Array(",\n".utf8)
    public static func normalFooter(lastSeq: Int64, pending: Int64 = 0) -> [UInt8] {
        Array("\n],\n\"last_seq\":\(lastSeq),\"pending\":\(pending)}\n".utf8)
    }

    // MARK: feed=continuous: one row per line

    public static func continuousLine(_ r: ChangeEntry) -> [UInt8] { row(r) + [10] }
    public static func continuousEnd(lastSeq: Int64, pending: Int64 = 0) -> [UInt8] {
        Array("{\"last_seq\":\(lastSeq),\"pending\":\(pending)}\n".utf8)
    }
    public static let heartbeat: [UInt8] = [10]

    // MARK: feed=eventsource (text/event-stream)

    public static func event(_ r: ChangeEntry) -> [UInt8] { Array("data: ".utf8) + row(r) + Array("\nid: \(r.sequence)\n\n".utf8) }
    public static func eventHeartbeat() -> [UInt8] { Array("event: heartbeat\ndata: \n\n".utf8) }
}
