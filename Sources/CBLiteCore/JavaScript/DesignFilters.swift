/// The changes feed's filters that are not registered through the API: CouchDB's
/// `_design` (design documents only, no JavaScript), `_view` (documents the view `view`
/// = "DDOC/VIEW" maps to at least one row) and a design document's JavaScript filter
/// "DDOC/NAME" (`filters.NAME(doc, req)`, the feed's parameters in `req.query`). A
/// filter that throws, loops or runs out of memory answers false for that document
/// (logged), as CouchDB's does.
enum DesignFilters {
    /// The filter `name` means, or nil when it names none of these (a registered filter,
    /// or none: the registry answers). 404 for a design document or function that is missing.
    static func filter(named name: String, in collection: Collection, params: JSONObject) throws -> ChangeFilterFunction? {
        switch name {
        case "_design":
            return { doc, _ in docID(doc)?.hasPrefix("_design/") == true }
        case "_view":
            guard let path = params["view"]?.stringValue else {
                throw CBLError.badRequest("`view` filter parameter is not provided.")
            }
            let (ddoc, view) = try split(path, what: "view")
            let design = try load(collection, ddoc)
            guard design.view(view) != nil else { throw CBLError.notFound("missing json key: \(view)") }
            let prefix = Array("[".utf8) + JSONWriter.ordered(.string(view)) + Array(",".utf8)
            return { doc, _ in
                run(design, "view \(view)", doc) { engine in
                    let out = try engine.call("__cbl_map", argumentsJSON: prefix + doc + Array("]".utf8))
                    return out.count > 2           // "[]": no row
                }
            }
        default:
            guard name.contains("/") else { return nil }
            let (ddoc, fname) = try split(name, what: "filter")
            let design = try load(collection, ddoc)
            guard design.body["filters"]?.objectValue?[fname]?.stringValue != nil else {
                throw CBLError.notFound("missing json key: \(fname)")
            }
            let head = Array("[".utf8) + JSONWriter.ordered(.string(fname)) + Array(",".utf8)
            let req = JSONWriter.ordered(.object(JSONObject([("query", .object(params)), ("method", .string("GET")),
                                                             ("userCtx", .object(JSONObject([("db", .null), ("name", .null), ("roles", .array([]))])))])))
            return { doc, _ in
                run(design, "filter \(fname)", doc) { engine in
                    let out = try engine.call("__cbl_filter", argumentsJSON: head + doc + Array(",".utf8) + req + Array("]".utf8))
                    return out == Array("true".utf8)
                }
            }
        }
    }

    private static func split(_ path: String, what: String) throws -> (String, String) {
        guard let slash = path.firstIndex(of: "/"), slash != path.startIndex, path.index(after: slash) != path.endIndex else {
            throw CBLError.badRequest("`\(what)` must be of the form `designname/\(what)name`")
        }
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }

    private static func load(_ collection: Collection, _ ddoc: String) throws -> DesignDocument {
        guard let design = try DesignDocument.load(collection, name: ddoc) else { throw CBLError.notFound("missing") }
        return design
    }

    private static func docID(_ doc: [UInt8]) -> String? {
        (try? doc.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) })?["_id"]?.stringValue
    }

    /// Runs a filter's JavaScript; a failure is false for this document, and logged.
    private static func run(_ design: DesignDocument, _ what: String, _ doc: [UInt8], _ body: (JSEngine) throws -> Bool) -> Bool {
        do { return try design.withEngine(body) } catch {
            Loggers.changes.warning("\(design.id) \(what) failed on document \(docID(doc) ?? "?"), which it filters out: \(error)")
            return false
        }
    }
}
