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
