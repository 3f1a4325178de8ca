extension QueryOptions.Range {
    /// The WHERE conditions of the range on a view index table (with its document-ID
    /// bounds as row values).
    func sqlConditions() -> (conds: [String], args: [SQLArg]) {
        var conds: [String] = []
        var args: [SQLArg] = []
        if let lo = lower {
            if let d = lowerDocID {
                conds.append("(key, docid) \(lowerInclusive ? ">=" : ">") (?, ?)")
                args += [.blob(lo), .string(d)]
            } else {
                conds.append(lowerInclusive ? "key >= ?" : "key > ?")
                args.append(.blob(lo))
            }
        }
        if let hi = upper {
            if let d = upperDocID {
                conds.append("(key, docid) \(upperInclusive ? "<=" : "<") (?, ?)")
                args += [.blob(hi), .string(d)]
            } else {
                conds.append(upperInclusive ? "key <= ?" : "key < ?")
                args.append(.blob(hi))
            }
        }
        return (conds, args)
    }

    /// The range without its start bound in scan order, for pages after the first: their
    /// cursor takes its place, so SQLite seeks straight to the cursor (given both, it seeks
    /// to the start bound and filters every row up to the cursor).
    func withoutStart(descending: Bool) -> QueryOptions.Range {
        var r = self
        if descending { r.upper = nil; r.upperDocID = nil } else { r.lower = nil; r.lowerDocID = nil }
        return r
    }
}

/// The WHERE conditions of one statement of a scan page.
struct ScanSegment {
    var conds: [String]
    var args: [SQLArg]

    enum Column { case key, docid, n }

    /// `column > ?` (greater) or `column < ?`, or with `=`.
    static func cond(_ c: Column, greater: Bool, orEqual: Bool) -> String {
        switch (c, greater, orEqual) {
        case (.key, true, false): return "key > ?"
        case (.key, true, true): return "key >= ?"
        case (.key, false, false): return "key < ?"
        case (.key, false, true): return "key <= ?"
        case (.docid, true, false): return "docid > ?"
        case (.docid, true, true): return "docid >= ?"
        case (.docid, false, false): return "docid < ?"
        case (.docid, false, true): return "docid <= ?"
        case (.n, true, false): return "n > ?"
        case (.n, true, true): return "n >= ?"
        case (.n, false, false): return "n < ?"
        case (.n, false, true): return "n <= ?"
        }
    }

    /// The rows of one key in scan order from `cursor` (exclusive: the last row of the
    /// previous page) or from its first: the rest of the cursor's document, then the later
    /// documents.
    static func rows(ofKey key: [UInt8], descending: Bool, cursor: (key: [UInt8], docID: String, n: Int64)?) -> [ScanSegment] {
        guard let c = cursor else { return [ScanSegment(conds: ["key = ?"], args: [.blob(key)])] }
        return [ScanSegment(conds: ["key = ?", "docid = ?", cond(.n, greater: !descending, orEqual: false)],
                            args: [.blob(key), .string(c.docID), .int(c.n)]),
                ScanSegment(conds: ["key = ?", cond(.docid, greater: !descending, orEqual: false)],
                            args: [.blob(key), .string(c.docID)])]
    }
}

extension QueryOptions.Range {
    /// The range's rows in scan order from `cursor` (exclusive: the last row of the previous
    /// page) or from its start, as statements to run one after the other, each of whose
    /// conditions SQLite's seek and range end take whole. A row value such as
    /// `(key, docid, n) > (?, ?, ?)`, or a document-ID bound `(key, docid) >= (?, ?)`, is
    /// also a seek, but SQLite then compares it again on every row (~600 instructions a row
    /// for the cursor): instead, the rest of the cursor's document, the rest of its key, then
    /// the later keys (and the same split at document-ID bounds).
    /// `cursorDocumentDone`: the cursor's document has no other row (an index whose map
    /// emits once a document), so the statement of the rest of its rows is left out.
    func scanSegments(descending: Bool, cursor: (key: [UInt8], docID: String, n: Int64)?,
                      cursorDocumentDone: Bool = false) -> [ScanSegment] {
        let start = descending ? upper : lower, startDocID = descending ? upperDocID : lowerDocID
        let startInclusive = descending ? upperInclusive : lowerInclusive
        let end = descending ? lower : upper, endDocID = descending ? lowerDocID : upperDocID
        let endInclusive = descending ? lowerInclusive : upperInclusive
        // Conditions as literals (no string built per page): after or before a value in scan order.
        func after(_ c: ScanSegment.Column, orEqual: Bool = false) -> String { ScanSegment.cond(c, greater: !descending, orEqual: orEqual) }
        func before(_ c: ScanSegment.Column, orEqual: Bool = false) -> String { ScanSegment.cond(c, greater: descending, orEqual: orEqual) }
        /// a's place against b's in scan order (keys sort as their bytes, as BLOBs do).
        func order(_ a: [UInt8], _ b: [UInt8]) -> Int {
            if a == b { return 0 }
            return a.lexicographicallyPrecedes(b) != descending ? -1 : 1
        }
        /// Rows of key k from a document on (`docCond`), up to the end bound; nil when the
        /// end bound leaves none.
        func sameKey(_ k: [UInt8], _ docCond: String, _ docID: String) -> ScanSegment? {
            var s = ScanSegment(conds: ["key = ?", docCond], args: [.blob(k), .string(docID)])
            if let end {
                let c = order(k, end)
                if c > 0 { return nil }
                if c == 0 {
                    if let endDocID {
                        s.conds.append(before(.docid, orEqual: endInclusive))
                        s.args.append(.string(endDocID))
                    } else if !endInclusive {
                        return nil
                    }
                }
            }
            return s
        }
        /// Rows of the keys after k (at or after when inclusive; every key when nil) up to
        /// the end bound.
        func laterKeys(_ k: [UInt8]?, inclusive: Bool) -> [ScanSegment] {
            var s = ScanSegment(conds: [], args: [])
            s.conds.reserveCapacity(2)
            s.args.reserveCapacity(2)
            if let k {
                s.conds.append(after(.key, orEqual: inclusive))
                s.args.append(.blob(k))
            }
            guard let end else { return [s] }
            guard let endDocID else {
                s.conds.append(before(.key, orEqual: endInclusive))
                s.args.append(.blob(end))
                return [s]
            }
            // The keys before the end key, then the end key's rows up to its document.
            s.conds.append(before(.key))
            s.args.append(.blob(end))
            var segments = [s]
            if k.map({ order(end, $0) > 0 || (inclusive && end == $0) }) ?? true {
                segments.append(ScanSegment(conds: ["key = ?", before(.docid, orEqual: endInclusive)],
                                            args: [.blob(end), .string(endDocID)]))
            }
            return segments
        }
        if let c = cursor {
            // The cursor's row is in the range, so all of its document's rows of its key are.
            var segments = cursorDocumentDone ? [] : [ScanSegment(conds: ["key = ?", "docid = ?", after(.n)],
                                                                  args: [.blob(c.key), .string(c.docID), .int(c.n)])]
            if let s = sameKey(c.key, after(.docid), c.docID) { segments.append(s) }
            return segments + laterKeys(c.key, inclusive: false)
        }
        guard let start else { return laterKeys(nil, inclusive: false) }
        guard let startDocID else { return laterKeys(start, inclusive: startInclusive) }
        var segments: [ScanSegment] = []
        if let s = sameKey(start, after(.docid, orEqual: startInclusive), startDocID) { segments.append(s) }
        return segments + laterKeys(start, inclusive: false)
    }
}
