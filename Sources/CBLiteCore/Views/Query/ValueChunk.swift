/// A chunk of rows' values (JSON texts; a row without one counts as null), copied into one
/// buffer so that holding a chunk costs no allocation per row.
struct ValueChunk {
    private var bytes: [UInt8] = []
    private var ends: [Int] = []

    var count: Int { ends.count }

    mutating func append(_ value: UnsafeBufferPointer<UInt8>?) {
        if let value { bytes.append(contentsOf: value) } else { bytes.append(contentsOf: ValueChunk.null) }
        ends.append(bytes.count)
    }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
    }

    /// The values parsed, last first.
    func parsedReversed() throws -> [JSONValue] {
        try bytes.withUnsafeBufferPointer { all in
            var out: [JSONValue] = []
            out.reserveCapacity(ends.count)
            for i in stride(from: ends.count - 1, through: 0, by: -1) {
                let start = i == 0 ? 0 : ends[i - 1]
                out.append(try JSONParser.parse(bytes: UnsafeBufferPointer(rebasing: all[start..<ends[i]])))
            }
            return out
        }
    }

    private static let null: [UInt8] = Array("null".utf8)
}
