/// The document a map function sees: its current revision as JSON, with "_id" and "_rev".
/// It points into the chunk of documents being mapped (read and rendered in one buffer).
public struct MapDocument {
    private let chunk: MapChunk
    private let entry: MapChunk.Entry

    init(_ chunk: MapChunk, _ entry: MapChunk.Entry) {
        self.chunk = chunk
        self.entry = entry
    }

    public var docID: String { String(decoding: chunk.bytes(entry.id), as: UTF8.self) }
    public var revID: String { String(decoding: chunk.bytes(entry.rev), as: UTF8.self) }
    public var sequence: Int64 { entry.sequence }
    public var json: [UInt8] { Array(chunk.bytes(entry.json)) }

    /// The parsed document.
    public var object: JSONObject {
        get throws {
            try JSONParser.parseObject(bytes: chunk.bytes(entry.json))
        }
    }

    /// Calls `body` with the JSON text, unparsed.
    public func withJSON<T>(_ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        try body(chunk.bytes(entry.json))
    }

    /// Calls `body` with the JSON as a C string (it is followed by a 0 byte in the chunk).
    public func withCString<T>(_ body: (UnsafePointer<CChar>) throws -> T) rethrows -> T {
        try body(UnsafeRawPointer(chunk.bytes(entry.json).baseAddress!).assumingMemoryBound(to: CChar.self))
    }
}
