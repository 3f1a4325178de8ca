import CBLiteCore
import CCBLite

// Live queries (see "Views and queries" in include/cblite.h).

private func liveQuery(_ h: OpaquePointer?) throws -> LiveQuery {
    try HandleTable.shared.lookup(h, as: LiveQuery.self, "cbl_live_query")
}

@c @implementation public func cbl_live_query_start(_ v: OpaquePointer?, _ opts: UnsafePointer<CChar>?,
                                                    _ callback: cbl_live_query_fn?, _ context: UnsafeMutableRawPointer?,
                                                    _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_live_query", empty: nil, err) {
        guard let callback else { throw CBLError(.badRequest, "callback is NULL") }
        let theView = try view(v)
        let options = try QueryOptions(json: try optionalString(opts, "options_json"))
        let ctx = Context(raw: context)
        let lq = LiveQuery(view: theView, options: options) { enumerator in
            // The result is a handle for the duration of the callback only.
            let handle = HandleTable.shared.register(QueryResultBox(enumerator))
            callback(ctx.raw, handle)
            HandleTable.shared.remove(handle)
        }
        try lq.start()
        return HandleTable.shared.register(lq)
    }
}

@c @implementation public func cbl_live_query_set_options(_ h: OpaquePointer?, _ opts: UnsafePointer<CChar>?,
                                                          _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let lq = try liveQuery(h)
        if lq.isFind {
            do { try lq.setFind(try FindRequest(json: try string(opts, "options_json"))) } catch let e as MangoError { throw e.cblError }
        } else {
            lq.setOptions(try QueryOptions(json: try optionalString(opts, "options_json")))
        }
    }
}

@c @implementation public func cbl_live_query_wait_idle(_ h: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        guard try liveQuery(h).waitIdle() else { throw CBLError(.notAcceptable, "the live query is stopped") }
    }
}

@c @implementation public func cbl_live_query_stop(_ h: OpaquePointer?) {
    guard let lq = try? liveQuery(h) else { return }
    HandleTable.shared.remove(h)
    lq.stop()
}
