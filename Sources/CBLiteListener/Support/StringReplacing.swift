/// Substring replacement without Foundation (header parameter quoting).
extension String {
    /// FoundationEssentials-free replacement of a substring.
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let r = rest.range(of: target) {
            out += rest[..<r.lowerBound]
            out += replacement
            rest = rest[r.upperBound...]
        }
        out += rest
        return out
    }
}

extension Substring {
    func range(of target: String) -> Range<Substring.Index>? {
        var i = startIndex
        while i != endIndex {
            if self[i...].hasPrefix(target) { return i..<index(i, offsetBy: target.count) }
            i = index(after: i)
        }
        return nil
    }
}
