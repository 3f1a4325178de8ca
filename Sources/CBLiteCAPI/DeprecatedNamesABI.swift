import CCBLite

// The seven calls whose names broke the header's naming rule (include/cblite.h,
// Conventions, "Names"), kept exported under their old names for programs built against
// them: each forwards to the same call under its rule name.

@c @implementation public func cbl_revs_diff(_ coll: OpaquePointer?, _ request: UnsafePointer<CChar>?, _ out: OutString?,
                                             _ err: ErrorOut?) -> cbl_status {
    cbl_collection_revs_diff(coll, request, out, err)
}

@c @implementation public func cbl_docs_put_existing(_ coll: OpaquePointer?, _ docs: UnsafePointer<CChar>?, _ out: OutString?,
                                                     _ err: ErrorOut?) -> cbl_status {
    cbl_collection_docs_put_existing(coll, docs, out, err)
}

@c @implementation public func cbl_docs_save(_ coll: OpaquePointer?, _ docs: UnsafePointer<CChar>?, _ out: OutString?,
                                             _ err: ErrorOut?) -> cbl_status {
    cbl_collection_docs_save(coll, docs, out, err)
}

@c @implementation public func cbl_docs_bulk_get(_ coll: OpaquePointer?, _ request: UnsafePointer<CChar>?, _ options: UnsafePointer<CChar>?,
                                                 _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    cbl_collection_docs_bulk_get(coll, request, options, out, err)
}

@c @implementation public func cbl_changes_wait(_ coll: OpaquePointer?, _ since: UInt64, _ timeoutMs: Int32,
                                                _ out: UnsafeMutablePointer<Int32>?, _ err: ErrorOut?) -> cbl_status {
    cbl_collection_changes_wait(coll, since, timeoutMs, out, err)
}

@c @implementation public func cbl_emit(_ emitter: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?,
                                        _ err: ErrorOut?) -> cbl_status {
    cbl_emitter_emit(emitter, key, value, err)
}

@c @implementation public func cbl_listener_remove(_ token: OpaquePointer?) {
    cbl_listener_token_remove(token)
}
