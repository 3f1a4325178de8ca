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
        var conditions: [String] = []
        if !includeDeleted { conditions.append("(flags & 1) = 0") }
        let (lo, hi) = descending ? (endKey, startKey) : (startKey, endKey)
        if lo != nil { conditions.append("docid >= :lo") }
        if hi != nil { conditions.append("docid <= :hi") }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql = "SELECT docid, revid, sequence, flags FROM \(table) \(whereClause) ORDER BY docid \(descending ? "DESC" : "ASC") LIMIT :limit OFFSET :skip"
        return try mapMissingTable {
            try store.read { conn in
                let s = try conn.prepare(sql)
                defer { s.reset() }
                var i: Int32 = 1
                if let lo { s.bind(i, lo); i += 1 }
                if let hi { s.bind(i, hi); i += 1 }
                s.bind(i, limit).bind(i + 1, max(0, skip))
                var out: [DocumentSummary] = []
                while try s.step() {
                    let flags = DocFlags(rawValue: s.int(3))
                    out.append(DocumentSummary(docID: s.string(0) ?? "", revID: s.string(1) ?? "", sequence: s.int(2),
                                               deleted: flags.contains(.deleted), conflicted: flags.contains(.conflicted)))
                }
                return out
            }
        }
    }
}
