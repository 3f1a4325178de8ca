/// What a full-text index holds of each document: a text per column (nil: none), or nil
/// for a document it leaves out. A FullTextIndex's fields make one; another kind of
/// definition (a design document's `index()` function, a view's emitted text) can make
/// its own, under its own storage name, and get the same storage, updates and queries.
public struct FullTextSource: Sendable {
    /// The storage name (FullTextStorage's registry key within the collection).
    public let name: String
    /// The columns' names, as field-scoped query terms name them (`title:coffee`).
    public let columns: [String]
    public let analyzer: FullTextAnalyzer
    /// Changes with the definition: an index built with another version is rebuilt.
    public let version: String
    public let extract: @Sendable (MapDocument) throws -> [String?]?

    public init(name: String, columns: [String], analyzer: FullTextAnalyzer, version: String,
                extract: @escaping @Sendable (MapDocument) throws -> [String?]?) {
        self.name = name
        self.columns = columns
        self.analyzer = analyzer
        self.version = version
        self.extract = extract
    }

    /// The text of a field's value: a string, or an array's strings (nested arrays too)
    /// one per line; nil when there is none (other types are not text).
    public static func text(of v: JSONValue) -> String? {
        switch v {
        case .string(let s): return s
        case .array(let a):
            let parts = a.compactMap(text(of:))
            return parts.isEmpty ? nil : parts.joined(separator: "\n")
        default: return nil
        }
    }
}
