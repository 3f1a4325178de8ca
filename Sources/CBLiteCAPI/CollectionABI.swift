import CBLiteCore
import CCBLite

private func collectionCall(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?,
                            _ open: () throws -> Collection) -> cbl_status {
    handleCall(out, "out", err, open)
}

@c @implementation public func cbl_db_default_collection(_ db: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                                         _ err: ErrorOut?) -> cbl_status {
    collectionCall(out, err) { try database(db).defaultCollection() }
}

@c @implementation public func cbl_db_collection(_ db: OpaquePointer?, _ scope: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                                                 _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    collectionCall(out, err) {
        let s = try optionalString(scope, "scope"), n = try string(name, "name")
        guard let c = try database(db).collection(scope: s, name: n) else {
            throw CBLError(.notFound, "collection \(s ?? "_default").\(n) does not exist")
        }
        return c
    }
}

@c @implementation public func cbl_db_create_collection(_ db: OpaquePointer?, _ scope: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                                                        _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    collectionCall(out, err) {
        try database(db).createCollection(scope: try optionalString(scope, "scope"), name: try string(name, "name"))
    }
}

@c @implementation public func cbl_db_delete_collection(_ db: OpaquePointer?, _ scope: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                                                        _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try database(db).deleteCollection(scope: try optionalString(scope, "scope"), name: try string(name, "name")) }
}

@c @implementation public func cbl_db_scope_names(_ db: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_json", empty: nil, err) { cString(try database(db).scopeNames().jsonArrayString) }
}

@c @implementation public func cbl_db_collection_names(_ db: OpaquePointer?, _ scope: UnsafePointer<CChar>?, _ out: OutString?,
                                                       _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_json", empty: nil, err) { cString(try database(db).collectionNames(scope: try optionalString(scope, "scope")).jsonArrayString) }
}

@c @implementation public func cbl_collection_release(_ coll: OpaquePointer?) {
    if (try? collection(coll)) != nil { HandleTable.shared.remove(coll) }
}

@c @implementation public func cbl_collection_name(_ coll: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_name", empty: nil, err) { cString(try collection(coll).name) }
}

@c @implementation public func cbl_collection_scope(_ coll: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_scope", empty: nil, err) { cString(try collection(coll).scope) }
}

@c @implementation public func cbl_collection_count(_ coll: OpaquePointer?, _ out: UnsafeMutablePointer<UInt64>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_count", empty: 0, err) { UInt64(try collection(coll).count) }
}

@c @implementation public func cbl_collection_last_sequence(_ coll: OpaquePointer?, _ out: UnsafeMutablePointer<UInt64>?,
                                                            _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_sequence", empty: 0, err) { UInt64(try collection(coll).lastSequence) }
}
