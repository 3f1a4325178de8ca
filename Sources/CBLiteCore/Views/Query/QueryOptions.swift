/// Query options with CouchDB's names (one JSON object in the C ABI). Keys are JSON
/// values; "key": null is a real key (null), so presence is kept apart from value.
public struct QueryOptions: Sendable {
    public enum UpdateMode: Sendable, Equatable { case before, never, after }
    public enum AllDocsMode: String, Sendable { case allDocs = "all_docs", includeDeleted = "include_deleted",
                                                    showConflicts = "show_conflicts", onlyConflicts = "only_conflicts",
                                                    bySequence = "by_sequence" }

    public var key: JSONValue?
    public var keys: [JSONValue]?
    public var startKey: JSONValue?
    public var endKey: JSONValue?
    public var inclusiveEnd = true
    public var startKeyDocID: String?
    public var endKeyDocID: String?
    public var descending = false
    public var limit: Int64 = -1
    public var skip: Int64 = 0
    /// nil: reduce when the view has a reduce function.
    public var reduce: Bool?
    public var group = false
    public var groupLevel = 0
    public var includeDocs = false
    /// With include_docs: each document carries its `_conflicts` (CouchDB's `conflicts`).
    public var conflicts = false
    public var update: UpdateMode = .before
    public var prefixMatchLevel = 0
    /// All-docs queries only.
    public var allDocsMode: AllDocsMode = .allDocs
    /// CouchDB's `sorted`: false lets rows come in any order (the same set). The index
    /// answers in key order either way; the listener then leaves out total_rows and
    /// offset, as CouchDB does.
    public var sorted = true
    /// A full-text query (FullTextQuery's syntax) on the view's text keys (Couchbase Lite
    /// 1.x's `fullTextQuery`): the rows are the text keys matching it, each with its match
    /// (TextKeyHit) as key. Key ranges, `keys`, grouping and reducing do not apply (400).
    public var fullTextQuery: String?
    /// With a full-text query: each row's snippet, cut and marked so (nil: none; 1.x's
    /// `fullTextSnippets`, off by default).
    public var fullTextSnippets: FullTextSnippetStyle?
    /// With a full-text query: rows best match first (BM25), else in index order (1.x's
    /// `fullTextRanking`, on by default).
    public var fullTextRanking = true

    public init() {}

    public init(json: String?) throws {
        guard let json, !json.isEmpty else { self.init(); return }
        let o = try JSONParser.parseObject(json, what: "query options")
        try self.init(object: o)
    }

    /// The option names `init(object:)` takes (any other is a 400 there).
    public static let names: Set<String> = [
        "key", "keys", "startkey", "start_key", "endkey", "end_key", "inclusive_end", "startkey_docid",
        "start_key_doc_id", "endkey_docid", "end_key_doc_id", "descending", "limit", "skip", "reduce", "group",
        "group_level", "include_docs", "conflicts", "update", "stale", "prefix_match_level", "all_docs_mode",
        "sorted", "full_text_query", "full_text_snippets", "full_text_ranking",
    ]

    public init(object o: JSONObject) throws {
        for (k, v) in o.members {
            switch k {
            case "key": key = v
            case "keys":
                guard let a = v.arrayValue else { throw CBLError.badRequest("option \"keys\" must be an array") }
                keys = a
            case "startkey", "start_key": startKey = v
            case "endkey", "end_key": endKey = v
            case "inclusive_end": inclusiveEnd = try v.boolOption(k)
            case "startkey_docid", "start_key_doc_id": startKeyDocID = try v.stringOption(k)
            case "endkey_docid", "end_key_doc_id": endKeyDocID = try v.stringOption(k)
            case "descending": descending = try v.boolOption(k)
            case "limit": limit = try v.intOption(k)
            case "skip": skip = try v.intOption(k)
            case "reduce": reduce = try v.boolOption(k)
            case "group": group = try v.boolOption(k)
            case "group_level":
                let n = try v.intOption(k)
                guard n <= 1_000_000 else { throw CBLError.badRequest("option \"group_level\" is too large") }
                groupLevel = Int(n)
            case "include_docs": includeDocs = try v.boolOption(k)
            case "conflicts": conflicts = try v.boolOption(k)
            case "update":
                if let b = v.boolValue { update = b ? .before : .never }
                else if v.stringValue == "true" { update = .before }
                else if v.stringValue == "false" { update = .never }
                else if v.stringValue == "after" { update = .after }
                else { throw CBLError.badRequest("option \"update\" must be true, false or \"after\"") }
            case "stale":
                switch v.stringValue {
                case "ok": update = .never
                case "update_after": update = .after
                case "false": update = .before
                default: throw CBLError.badRequest("option \"stale\" must be \"ok\" or \"update_after\"")
                }
            case "prefix_match_level":
                let n = try v.intOption(k)
                guard n <= 64 else { throw CBLError.badRequest("option \"prefix_match_level\" is too large") }
                prefixMatchLevel = Int(n)
            case "all_docs_mode":
                guard let s = v.stringValue, let m = AllDocsMode(rawValue: s) else {
                    throw CBLError.badRequest("option \"all_docs_mode\" must be one of all_docs, include_deleted, show_conflicts, only_conflicts, by_sequence")
                }
                allDocsMode = m
            case "sorted": sorted = try v.boolOption(k)
            case "full_text_query": fullTextQuery = try v.stringOption(k)
            case "full_text_snippets": fullTextSnippets = try FullTextSnippetStyle(option: v, name: k)
            case "full_text_ranking": fullTextRanking = try v.boolOption(k)
            default:
                throw CBLError.badRequest("unknown query option \"\(k)\"")
            }
        }
        if let key {
            guard keys == nil else { throw CBLError.badRequest("options \"key\" and \"keys\" are exclusive") }
            startKey = key
            endKey = key
            inclusiveEnd = true
        }
    }

    /// A full-text query's rows are matches, not a key range: the options that select keys,
    /// group or reduce are refused with it (View.query). (The full-text options alone do
    /// nothing without it.)
    func checkFullText() throws {
        guard fullTextQuery != nil else { return }
        let keyed: [(String, Bool)] = [("key\" or \"startkey", startKey != nil), ("key\" or \"endkey", endKey != nil),
                                       ("keys", keys != nil), ("startkey_docid", startKeyDocID != nil),
                                       ("endkey_docid", endKeyDocID != nil), ("prefix_match_level", prefixMatchLevel > 0),
                                       ("group", group), ("group_level", groupLevel > 0), ("reduce", reduce == true)]
        for (name, given) in keyed where given {
            throw CBLError.badRequest("option \"\(name)\" cannot be combined with \"full_text_query\"")
        }
    }

    /// Group level in effect: 0 none, Int.max for group=true (exact keys).
    var effectiveGroupLevel: Int { group ? Int.max : groupLevel }

    /// The key range (CollatableKeys) in scan order: `upper` is the end key ascending and the start key
    /// descending, and is the one prefix matching extends.
    struct Range {
        var lower: [UInt8]?
        var lowerDocID: String?
        var lowerInclusive = true
        var upper: [UInt8]?
        var upperDocID: String?
        var upperInclusive = true
    }

    func keyRange() -> Range {
        var r = Range()
        let start = startKey.map { CollatableKey.encode($0) }
        var end = endKey
        var startV = startKey
        if prefixMatchLevel > 0 {
            if descending { startV = startV.map { QueryOptions.prefixMatchKey($0, level: prefixMatchLevel) } }
            else { end = end.map { QueryOptions.prefixMatchKey($0, level: prefixMatchLevel) } }
        }
        let endBytes = end.map { CollatableKey.encode($0) }
        if descending {
            r.upper = startV.map { CollatableKey.encode($0) }
            r.upperDocID = startKeyDocID
            r.lower = endBytes
            r.lowerDocID = endKeyDocID
            r.lowerInclusive = inclusiveEnd
        } else {
            r.lower = start
            r.lowerDocID = startKeyDocID
            r.upper = endBytes
            r.upperDocID = endKeyDocID
            r.upperInclusive = inclusiveEnd
        }
        return r
    }

    /// The seeds' prefix matching: a string gets the highest character appended (U+FFFF
    /// has the highest primary weight in the root collation); an array gets `{}` appended
    /// at level 1, or its last item prefix-extended at deeper levels; other keys stay.
    static func prefixMatchKey(_ key: JSONValue, level: Int) -> JSONValue {
        guard level > 0 else { return key }
        switch key {
        case .string(let s): return .string(s + "\u{FFFF}")
        case .array(var a):
            if level == 1 {
                a.append(.object(JSONObject()))
            } else if let last = a.last {
                a[a.count - 1] = prefixMatchKey(last, level: level - 1)
            }
            return .array(a)
        default: return key
        }
    }

    /// Whether a key (CollatableKey) can be among this query's rows (live queries skip
    /// re-running when no changed key can). Conservative for document ID bounds.
    func mayContain(key: [UInt8]) -> Bool {
        if let keys {
            return keys.contains { CollatableKey.encode($0) == key }
        }
        let r = keyRange()
        if let lo = r.lower {
            let c = CollatableKey.compare(key, lo)
            if c < 0 || (c == 0 && !r.lowerInclusive && r.lowerDocID == nil) { return false }
        }
        if let hi = r.upper {
            let c = CollatableKey.compare(key, hi)
            if c > 0 || (c == 0 && !r.upperInclusive && r.upperDocID == nil) { return false }
        }
        return true
    }
}
