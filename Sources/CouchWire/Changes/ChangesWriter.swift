import CBLiteBase

/// The `_changes` feed's JSON as CouchDB writes it. Sequences are numbers (CouchDB's
/// own are opaque strings; clients pass them back verbatim, so either works).
public enum ChangesWriter {
    public struct Row: Sendable {
        public var seq: Int64
        public var id: String
        public var revs: [String]
        public var deleted: Bool
        public var doc: [UInt8]?
        public init(seq: Int64, id: String, revs: [String], deleted: Bool, doc: [UInt8]? = nil) {
            self.seq = seq; self.id = id; self.revs = revs; self.deleted = deleted; self.doc = doc
        }
    }

    /// `{"seq":N,"id":"..","changes":[{"rev":".."}],"deleted":true,"doc":{..}}`.
    public static func row(_ r: Row) -> [UInt8] {
        var w = JSONWriter(canonical: false, capacity: 128 + (r.doc?.count ?? 0))
        w.append("{\"seq\":\(r.seq),\"id\":")
        w.writeString(r.id)
        w.append(",\"changes\":[")
        for (i, rev) in r.revs.enumerated() {
            w.append(i == 0 ? "{\"rev\":" : ",{\"rev\":")
            w.writeString(rev)
            w.appendByte(UInt8(ascii: "}"))
        }
        w.appendByte(UInt8(ascii: "]"))
        if r.deleted { w.append(",\"deleted\":true") }
        if let doc = r.doc { w.append(",\"doc\":"); w.appendRaw(doc) }
        w.appendByte(UInt8(ascii: "}"))
        return w.bytes
    }

    // MARK: feed=normal and longpoll: one JSON object, written in pieces

    public static let normalHeader = Array("{\"results\":[\n".utf8)
    /// Between rows (CouchDB puts ",\r\n" there).
    public static let normalSeparator = Array(",\n".utf8)
    public static func normalFooter(lastSeq: Int64, pending: Int64 = 0) -> [UInt8] {
        Array("\n],\n\"last_seq\":\(lastSeq),\"pending\":\(pending)}\n".utf8)
    }

    // MARK: feed=continuous: one row per line

    public static func continuousLine(_ r: Row) -> [UInt8] { row(r) + [10] }
    public static func continuousEnd(lastSeq: Int64, pending: Int64 = 0) -> [UInt8] {
        Array("{\"last_seq\":\(lastSeq),\"pending\":\(pending)}\n".utf8)
    }
    public static let heartbeat: [UInt8] = [10]

    // MARK: feed=eventsource (text/event-stream)

    public static func event(_ r: Row) -> [UInt8] { Array("data: ".utf8) + row(r) + Array("\nid: \(r.seq)\n\n".utf8) }
    public static func eventHeartbeat() -> [UInt8] { Array("event: heartbeat\ndata: \n\n".utf8) }
}
