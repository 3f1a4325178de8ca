import CBLiteCore
import CCBLite
import Glibc

// Mango queries and json indexes (see "Mango queries" in include/cblite.h).

/// Runs a Mango call, passing its errors as the engine's (message "<error>: <reason>").
private func mango<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let e as MangoError { throw e.cblError }
}

@c @implementation public func cbl_collection_find(_ coll: OpaquePointer?, _ query: UnsafePointer<CChar>?,
                                                   _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    handleCall(out, "out_result", err) {
        let c = try collection(coll)
        let q = try string(query, "query_json")
        let (result, cursor) = try mango { try c.findQuery(try FindRequest(json: q)) }
        return QueryResultBox(result, find: cursor)
    }
}

@c @implementation public func cbl_query_result_find_info(_ result: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let box = try HandleTable.shared.lookup(result, as: QueryResultBox.self, "cbl_query_result")
        guard let find = box.find else { throw CBLError(.badRequest, "the result is not a find's") }
        return JSONWriter.ordered(find.infoJSON)
    }
}

@c @implementation public func cbl_collection_explain(_ coll: OpaquePointer?, _ query: UnsafePointer<CChar>?, _ out: OutString?,
                                                      _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let c = try collection(coll)
        let q = try string(query, "query_json")
        return JSONWriter.ordered(try mango { try c.explain(try FindRequest(json: q), databaseName: c.database.name) })
    }
}

@c @implementation public func cbl_collection_create_index(_ coll: OpaquePointer?, _ index: UnsafePointer<CChar>?, _ out: OutString?,
                                                           _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let c = try collection(coll)
        let def = try jsonValue(index, "index_json")
        let r = try mango { try c.createMangoIndex(def) }
        return JSONWriter.ordered(.object(JSONObject([("result", .string(r.result)), ("id", .string(r.id)), ("name", .string(r.name))])))
    }
}

@c @implementation public func cbl_collection_delete_index(_ coll: OpaquePointer?, _ ddoc: UnsafePointer<CChar>?,
                                                           _ name: UnsafePointer<CChar>?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let c = try collection(coll)
        let d = try string(ddoc, "ddoc"), n = try string(name, "name")
        try mango { try c.deleteMangoIndex(ddoc: d, type: "json", name: n) }
    }
}

@c @implementation public func cbl_collection_indexes(_ coll: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let c = try collection(coll)
        return JSONWriter.ordered(try mango { try c.mangoIndexListJSON() })
    }
}

@c @implementation public func cbl_collection_live_find(_ coll: OpaquePointer?, _ query: UnsafePointer<CChar>?,
                                                        _ callback: cbl_live_query_fn?, _ context: UnsafeMutableRawPointer?,
                                                        _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_live_query", empty: nil, err) {
        guard let callback else { throw CBLError(.badRequest, "callback is NULL") }
        let c = try collection(coll)
        let request = try mango { try FindRequest(json: try string(query, "query_json")) }
        let ctx = Context(raw: context)
        let lq = LiveQuery(collection: c, find: request) { enumerator in
            // The result is a handle for the duration of the callback only.
            let handle = HandleTable.shared.register(QueryResultBox(enumerator))
            callback(ctx.raw, handle)
            HandleTable.shared.remove(handle)
        }
        try mango { try lq.start() }
        return HandleTable.shared.register(lq)
    }
}
