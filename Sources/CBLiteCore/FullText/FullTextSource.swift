/// What a full-text index holds of each document: a text per column (nil: none), or nil
/// for a document it leaves out. A FullTextIndex's fields make one; another kind of
/// definition (a design document's `index()` function, a view's emitted text) can make
/// its own, under its own storage name, and get the same storage, updates and queries.
/// A source may also give values of `valueFields` (numbers or whole strings, not
/// tokenized): stored beside the text where SQL compares and sorts them (ranges such as
/// `year:[2000 TO *]`, a Nouveau `double` field, sorting by a field).
public struct FullTextSource: Sendable {
    /// The storage name (FullTextStorage's registry key within the collection).
    public let name: String
    /// The columns' names, as field-scoped query terms name them (`title:coffee`).
    public let columns: [String]
    public let analyzer: FullTextAnalyzer
    /// Changes with the definition: an index built with another version is rebuilt.
    public let version: String
    /// The fields whose values are stored for comparisons and sorting (FullTextValue).
    public let valueFields: [FullTextValueField]
    /// A document's row: nil for a document the index leaves out.
    public let extractRow: @Sendable (MapDocument) throws -> FullTextRow?

    public init(name: String, columns: [String], analyzer: FullTextAnalyzer, version: String,
                extract: @escaping @Sendable (MapDocument) throws -> [String?]?) {
        self.init(name: name, columns: columns, analyzer: analyzer, version: version, valueFields: []) { doc in
            try extract(doc).map { FullTextRow(texts: $0) }
        }
    }

    public init(name: String, columns: [String], analyzer: FullTextAnalyzer, version: String, valueFields: [FullTextValueField],
                extractRow: @escaping @Sendable (MapDocument) throws -> FullTextRow?) {
        self.name = name
        self.columns = columns
        self.analyzer = analyzer
        self.version = version
        self.valueFields = valueFields
        self.extractRow = extractRow
    }

    /// A document's texts alone (one per column).
    public var extract: @Sendable (MapDocument) throws -> [String?]? {
        let row = extractRow
        return { doc in try row(doc)?.texts }
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

/// One document's entry in a full-text index: a text per column, and values of the
/// source's `valueFields` (`field`: an index into them; a field may have several values,
/// the first one is its sort value).
public struct FullTextRow: Sendable, Equatable {
    public var texts: [String?]
    public var values: [(field: Int, value: FullTextValue)]

    public init(texts: [String?], values: [(field: Int, value: FullTextValue)] = []) {
        self.texts = texts
        self.values = values
    }

    /// Whether the row holds anything (a document with nothing to index gets no row).
    var isEmpty: Bool { !texts.contains { $0 != nil } && values.isEmpty }

    public static func == (a: FullTextRow, b: FullTextRow) -> Bool {
        a.texts == b.texts && a.values.count == b.values.count
            && zip(a.values, b.values).allSatisfy { $0.field == $1.field && $0.value == $1.value }
    }
}

/// A field whose values a source stores: numbers (Nouveau's `double`) or whole strings.
public struct FullTextValueField: Sendable, Equatable {
    public let name: String
    public let numeric: Bool

    public init(_ name: String, numeric: Bool) {
        self.name = name
        self.numeric = numeric
    }
}

/// A stored field value: compared as a number or as a whole string (byte order).
public enum FullTextValue: Sendable, Equatable {
    case number(Double)
    case string(String)
}
