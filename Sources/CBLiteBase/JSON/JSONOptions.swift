/// Typed reading of one member of an options object (open options, changes feed, queries),
/// with the same 400 message everywhere for a value of the wrong type.
extension JSONValue {
    public func boolOption(_ name: String) throws -> Bool {
        guard let b = boolValue else { throw CBLError.badRequest("option \"\(name)\" must be a boolean") }
        return b
    }

    public func intOption(_ name: String, in range: ClosedRange<Int64> = 0...Int64.max) throws -> Int64 {
        guard let i = intValue, range.contains(i) else {
            throw CBLError.badRequest(range.upperBound == Int64.max && range.lowerBound == 0
                ? "option \"\(name)\" must be a non-negative integer"
                : "option \"\(name)\" must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return i
    }

    /// An array of strings (document IDs, revision IDs).
    public func stringArrayOption(_ name: String) throws -> [String] {
        guard let a = arrayValue else { throw CBLError.badRequest("\"\(name.prefix(80))\" must be an array of strings") }
        return try a.map { item in
            guard let s = item.stringValue else { throw CBLError.badRequest("\"\(name.prefix(80))\" must be an array of strings") }
            return s
        }
    }

    /// A string, or nil for JSON null.
    public func stringOption(_ name: String) throws -> String? {
        if isNull { return nil }
        guard let s = stringValue else { throw CBLError.badRequest("option \"\(name)\" must be a string") }
        return s
    }
}
