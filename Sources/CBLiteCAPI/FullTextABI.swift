import CBLiteCore
import CCBLite

// Full-text indexes and searches (see "Full-text search" in include/cblite.h).

/// What a search's result handle says beside its rows.
final class SearchInfo {
    let bookmark: String?
    let count: Int
    init(bookmark: String?, count: Int) { self.bookmark = bookmark; self.count = count }
}

@c @implementation public func cbl_collection_create_text_index(_ coll: OpaquePointer?, _ def: UnsafePointer<CChar>?, _ out: OutString?,
                                                                _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let c = try collection(coll)
        let index = try FullTextIndex(definition: try jsonValue(def, "definition_json"))
        let result = try c.createTextIndex(index)
        return JSONWriter.ordered(.object(JSONObject([("result", .string(result)), ("id", .string(index.ddoc)), ("name", .string(index.name))])))
    }
}

@c @implementation public func cbl_collection_delete_text_index(_ coll: OpaquePointer?, _ ddoc: UnsafePointer<CChar>?,
                                                                _ name: UnsafePointer<CChar>?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let c = try collection(coll)
        try c.deleteTextIndex(name: try string(name, "name"), ddoc: try optionalString(ddoc, "ddoc"))
    }
}

@c @implementation public func cbl_collection_text_indexes(_ coll: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") { JSONWriter.ordered(.array(try collection(coll).textIndexes().map(\.json))) }
}

@c @implementation public func cbl_collection_search(_ coll: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ request: UnsafePointer<CChar>?,
                                                     _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    handleCall(out, "out_result", err) {
        let c = try collection(coll)
        let n = try string(name, "name")
        let json = try jsonValue(request, "request_json")
        let (result, bookmark) = try c.searchQuery(index: n, ddoc: FullTextSearchRequest.ddoc(in: json), FullTextSearchRequest(json: json))
        let box = QueryResultBox(result)
        box.search = SearchInfo(bookmark: bookmark, count: Int(result.totalRows))
        return box
    }
}

@c @implementation public func cbl_query_result_search_info(_ result: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let box = try HandleTable.shared.lookup(result, as: QueryResultBox.self, "cbl_query_result")
        guard let info = box.search else { throw CBLError(.badRequest, "the result is not a search's") }
        return JSONWriter.ordered(.object(JSONObject([("bookmark", info.bookmark.map { .string($0) } ?? .null),
                                                      ("total_rows", .int(Int64(info.count)))])))
    }
}
