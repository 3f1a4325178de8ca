/// Reading what is still readable from a damaged collection. A damaged page makes every
/// scan that crosses it fail, so listing and exporting stop at the first bad page while
/// most documents still read by ID. Salvage finds document IDs two independent ways — the
/// docid index, scanned from both ends, and the table looked up row by row by sequence —
/// then reads each document on its own: what reads is handed out, what fails is listed.
extension Collection {
    public struct SalvageReport: Sendable {
        /// Documents whose every leaf revision was read.
        public var documents = 0
        public var revisions = 0
        /// Documents known by ID whose revisions could not be read.
        public var lost: [(docID: String, message: String)] = []
        /// Row lookups that failed: documents whose ID is unknown may be among them.
        public var unreadableRows = 0

        public var json: [UInt8] {
            Array(JSONValue.object(JSONObject([
                ("documents", .int(Int64(documents))), ("revisions", .int(Int64(revisions))),
                ("lost", .array(lost.map { .object(JSONObject([("id", .string($0.docID)), ("error", .string($0.message))])) })),
                ("unreadable_rows", .int(Int64(unreadableRows))),
            ])).jsonString.utf8)
        }
    }

    /// Hands every readable leaf revision (as `openRevs` renders it, with `_revisions` and
    /// inline attachments: what import takes back) to `each`, and reports what was lost.
    /// Throws only when nothing can be read at all, or when `each` throws.
    public func salvage(_ each: ([UInt8]) throws -> Void) throws -> SalvageReport {
        try check()
        var report = SalvageReport()
        let table = Schema.docTable(id)
        var ids = Set<String>()
        try store.read { conn in
            // 1. The docid index, ascending then descending: both ends up to a bad page.
            for order in ["ASC", "DESC"] {
                guard let s = try? conn.prepareUncached("SELECT docid FROM \(table) ORDER BY docid \(order)") else { continue }
                while true {
                    guard let more = try? s.step(), more else { break }
                    if let id = s.string(0) { ids.insert(id) }
                }
            }
            // 2. Row by row, up to the highest sequence anyone knows of.
            let maxSeq = max(((try? conn.queryInt("SELECT max(sequence) FROM \(table)")) ?? 0) ?? 0,
                             (try? CollectionMeta.load(id, conn).lastSeq) ?? 0)
            if maxSeq > 0, let s = try? conn.prepareUncached("SELECT docid FROM \(table) WHERE sequence=?") {
                for seq in 1...maxSeq {
                    s.reset()
                    s.bind(1, seq)
                    do {
                        if try s.step(), let id = s.string(0) { ids.insert(id) }
                    } catch {
                        report.unreadableRows += 1
                    }
                }
                s.reset()
            }
        }
        for docID in ids.sorted() {
            var o = RevisionOptions()
            o.revisions = true
            o.attachments = .inline
            let revs: [[UInt8]]
            do {
                revs = try openRevs(docID: docID, revs: nil, options: o).compactMap {
                    if case .ok(let r) = $0 { return r.json }
                    return nil
                }
            } catch let e as CBLError where e.status == .internalError || e.status == .notFound {
                report.lost.append((docID, e.message))
                continue
            }
            for r in revs { try each(r) }
            report.documents += 1
            report.revisions += revs.count
        }
        Loggers.database.info("salvaged \(report.documents) documents of \(scope).\(name); \(report.lost.count) lost, \(report.unreadableRows) unreadable rows")
        return report
    }
}
