/// Documents by ID (ASCII/byte order of the primary key): the `cblite ls` listing and
/// the base of all-docs queries.
extension Collection {
    public struct DocumentSummary: Sendable {
        public let docID: String
        public let revID: String
        public let sequence: Int64
        public let deleted: Bool
        public let conflicted: Bool
    }

    /// IDs in [startKey, endKey] (either open), ascending or descending, after `skip`,
    /// at most `limit` (negative: no limit).
    public func documents(startKey: String? = nil, endKey: String? = nil, descending: Bool = false,
                          limit: Int64 = -1, skip: Int64 = 0, includeDeleted: Bool = false) throws -> [DocumentSummary] {
        try check()
        let (lo, hi) = descending ? (endKey, startKey) : (startKey, endKey)
        return try mapMissingTable {
            try store.read { conn in
                let s = try docStore.summaries(conn, filter: includeDeleted ? .all : .live,
                                                lower: lo.map { .init(value: .string($0), inclusive: true) },
                                                upper: hi.map { .init(value: .string($0), inclusive: true) },
                                                descending: descending, limit: limit, offset: skip)
                defer { s.reset() }
                var out: [DocumentSummary] = []
                while try s.step() {
                    let flags = DocFlags(rawValue: s.int(2))
                    out.append(DocumentSummary(docID: s.string(0) ?? "", revID: s.string(3) ?? "", sequence: s.int(1),
                                               deleted: flags.contains(.deleted), conflicted: flags.contains(.conflicted)))
                }
                return out
            }
        }
    }
}
