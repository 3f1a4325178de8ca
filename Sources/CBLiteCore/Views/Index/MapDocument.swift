/// The document a map function sees: its current revision as JSON, with "_id" and "_rev".
/// It points into the chunk of documents being mapped (read and rendered in one buffer).
package struct MapDocument {
    private let chunk: MapChunk
    private let entry: MapChunk.Entry

    init(_ chunk: MapChunk, _ entry: MapChunk.Entry) {
        self.chunk = chunk
        self.entry = entry
    }

    package var docID: String { String(decoding: chunk.bytes(entry.id), as: UTF8.self) }
    package var revID: String { String(decoding: chunk.bytes(entry.rev), as: UTF8.self) }
    package var sequence: Int64 { entry.sequence }
    package var json: [UInt8] { Array(chunk.bytes(entry.json)) }

    /// The parsed document.
    package var object: JSONObject {
        get throws {
            try JSONParser.parseObject(bytes: chunk.bytes(entry.json))
        }
    }

    /// Calls `body` with the JSON as a C string (it is followed by a 0 byte in the chunk).
    package func withCString<T>(_ body: (UnsafePointer<CChar>) throws -> T) rethrows -> T {
        try body(UnsafeRawPointer(chunk.bytes(entry.json).baseAddress!).assumingMemoryBound(to: CChar.self))
    }
}
