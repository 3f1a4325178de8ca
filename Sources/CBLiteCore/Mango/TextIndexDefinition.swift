/// Mango's `text` indexes over `/db/_index` (CouchDB's shape): `POST` with `"type": "text"`
/// creates a full-text index (FullTextIndex, in the same `language: "query"` design
/// documents as json indexes), `GET` lists it with the json ones, `DELETE
/// /db/_index/{ddoc}/text/{name}` deletes it.
enum TextIndexDefinition {
    /// Listing order: by design document, then name (byte order).
    static func listed(_ a: JSONValue, _ b: JSONValue) -> Bool {
        func names(_ v: JSONValue) -> (ddoc: String, name: String) {
            (v.objectValue?["ddoc"]?.stringValue ?? "", v.objectValue?["name"]?.stringValue ?? "")
        }
        return QueryIndexNaming.listedBefore(names(a), names(b))
    }

    /// The index a `POST /db/_index` body of type text defines. CouchDB's `index` members:
    /// `fields` (`{"name", "type"}` objects; only `string` fields hold text, the others are left to
    /// the selector, which matches documents anyway), `analyzer` or `default_field.analyzer`,
    /// `partial_filter_selector` (or its older name `selector`). Indexing every field
    /// (no `fields`) is not supported: the index needs its columns.
    static func index(_ o: JSONObject) throws -> FullTextIndex {
        guard case .object(let d)? = o["index"] else {
            throw MangoError.invalidIndex("Text indexes must be an object, not: \(ErlangTerm.format(o["index"] ?? .null))")
        }
        for (k, _) in d.members where !["fields", "analyzer", "default_field", "selector", "partial_filter_selector",
                                        "index_array_lengths"].contains(k) {
            throw MangoError.invalidKey(k)
        }
        guard case .array(let given)? = d["fields"] else {
            throw MangoError.invalidIndex("A text index needs its fields listed (index.fields): indexing every field is not supported")
        }
        var fields: [String] = []
        for f in given {
            guard case .object(let fo) = f, fo.members.count == 2, case .string(let name)? = fo["name"],
                  case .string(let type)? = fo["type"], ["string", "number", "boolean"].contains(type) else {
                throw MangoError(400, "invalid_index_fields_definition", "Text Index field definitions must be of the form {\"name\": \"non-empty fieldname\", \"type\": \"boolean,number, or string\"}. Def: \(ErlangTerm.format(f))")
            }
            if type == "string" && !fields.contains(name) { fields.append(name) }
        }
        guard !fields.isEmpty else { throw MangoError.invalidIndex("A text index needs at least one field of type string") }
        var analyzer = d["analyzer"]
        if analyzer == nil, case .object(let df)? = d["default_field"] { analyzer = df["analyzer"] }
        var partial: Selector? = nil
        if let p = d["partial_filter_selector"] ?? d["selector"] { partial = try Selector(p) }
        let names = try QueryIndexNaming.names(o, definition: .object(d))
        do {
            return try FullTextIndex(ddoc: names.ddoc, name: names.name, fields: fields,
                                     analyzer: try FullTextAnalyzer(json: analyzer), partialFilter: partial)
        } catch let e as CBLError {
            throw MangoError.invalidIndex(e.message)
        }
    }
}

extension Collection {
    /// `POST /db/_index` with `"type": "text"`.
    func createTextIndex(mango o: JSONObject) throws -> (result: String, id: String, name: String) {
        let index = try TextIndexDefinition.index(o)
        do {
            return (try createTextIndex(index), index.ddoc, index.name)
        } catch let e as CBLError where e.status == .badRequest {
            throw MangoError(400, "invalid_ddoc_lang", e.message)
        }
    }

    /// `DELETE /db/_index/{ddoc}/text/{name}`.
    func deleteTextIndex(mango ddocID: String, name: String) throws {
        guard try textIndexes().contains(where: { $0.ddoc == ddocID && $0.name == name }) else { throw MangoError.indexNotFound }
        try deleteTextIndex(name: name, ddoc: ddocID)
    }
}
