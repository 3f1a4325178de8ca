import CBLiteCore
import CCBLite
import Glibc

@c @implementation public func cbl_doc_get(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ flags: UInt32, _ out: OutString?,
                                           _ err: ErrorOut?) -> cbl_status {
    textCall(out, err, "out_json") {
        try collection(coll).getText(docID: try string(docID, "doc_id"), options: Collection.GetOptions(rawValue: flags))
    }
}

@c @implementation public func cbl_doc_get_revision(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ revID: UnsafePointer<CChar>?,
                                                    _ flags: UInt32, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        try collection(coll).get(docID: try string(docID, "doc_id"), revID: try string(revID, "rev_id"),
                                 options: Collection.GetOptions(rawValue: flags))
    }
}

@c @implementation public func cbl_doc_put(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ body: UnsafePointer<CChar>?,
                                           _ parent: UnsafePointer<CChar>?, _ flags: UInt32, _ outDocID: OutString?,
                                           _ outRevID: OutString?, _ err: ErrorOut?) -> cbl_status {
    outDocID?.pointee = nil
    outRevID?.pointee = nil
    return abiCall(err) {
        let c = try collection(coll)
        let id = try optionalString(docID, "doc_id")
        let p = try optionalString(parent, "parent_rev_id")
        let r = try withJSONBytes(body, "body_json") {
            try c.put(docID: id, body: $0, parent: p, allowConflict: flags & CBL_PUT_ALLOW_CONFLICT != 0)
        }
        outDocID?.pointee = cString(r.docID)
        outRevID?.pointee = cString(r.revID)
    }
}

@c @implementation public func cbl_doc_delete(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ parent: UnsafePointer<CChar>?,
                                              _ outRevID: OutString?, _ err: ErrorOut?) -> cbl_status {
    outRevID?.pointee = nil
    return abiCall(err) {
        let rev = try collection(coll).delete(docID: try string(docID, "doc_id"), parent: try optionalString(parent, "parent_rev_id"))
        outRevID?.pointee = cString(rev)
    }
}

@c @implementation public func cbl_doc_update(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ update: cbl_update_fn?,
                                              _ context: UnsafeMutableRawPointer?, _ outRevID: OutString?, _ err: ErrorOut?) -> cbl_status {
    outRevID?.pointee = nil
    return abiCall(err) {
        guard let update else { throw CBLError(.badRequest, "update is NULL") }
        let rev = try collection(coll).update(docID: try string(docID, "doc_id")) { current in
            var result: UnsafeMutablePointer<CChar>? = nil
            let save: Int32 = if let current { current.withCString { update(context, $0, &result) } } else { update(context, nil, &result) }
            defer { free(result) }
            guard save != 0 else { return nil }
            return try string(result, "the update callback's new body")
        }
        outRevID?.pointee = cString(rev)
    }
}

@c @implementation public func cbl_doc_purge(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try collection(coll).purge(docID: try string(docID, "doc_id")) }
}

@c @implementation public func cbl_doc_conflicts(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ out: OutString?,
                                                 _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") { Array(try collection(coll).conflicts(docID: try string(docID, "doc_id")).jsonArrayString.utf8) }
}

@c @implementation public func cbl_doc_history(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ revID: UnsafePointer<CChar>?,
                                               _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        Array(try collection(coll).history(docID: try string(docID, "doc_id"), revID: try optionalString(revID, "rev_id")).jsonArrayString.utf8)
    }
}

@c @implementation public func cbl_doc_revision_tree(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ out: OutString?,
                                                     _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") { Array(try collection(coll).revisionTree(docID: try string(docID, "doc_id")).utf8) }
}

@c @implementation public func cbl_doc_put_existing(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ body: UnsafePointer<CChar>?,
                                                    _ history: UnsafePointer<CChar>?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let c = try collection(coll)
        let id = try string(docID, "doc_id")
        let revs = try RevisionHistory.list(json: try string(history, "history_json"))
        _ = try withJSONBytes(body, "body_json") { try c.putExisting(docID: id, body: $0, history: revs) }
    }
}

@c @implementation public func cbl_doc_set_expiration(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ time: Int64,
                                                      _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try collection(coll).setExpiration(docID: try string(docID, "doc_id"), unixTime: time) }
}

@c @implementation public func cbl_doc_get_expiration(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?,
                                                      _ out: UnsafeMutablePointer<Int64>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_unix_time", empty: 0, err) { try collection(coll).expiration(docID: try string(docID, "doc_id")) }
}

@c @implementation public func cbl_collection_set_validator(_ coll: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ validate: cbl_validate_fn?,
                                                            _ context: UnsafeMutableRawPointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let c = try collection(coll)
        let n = try string(name, "name")
        guard let validate else { try c.setValidator(name: n, nil); return }
        let ctx = Context(raw: context)
        try c.setValidator(name: n) { newJSON, currentJSON in
            var message = [CChar](repeating: 0, count: Int(CBL_ERROR_MESSAGE_SIZE))
            let ok: Int32 = newJSON.withCString { newP in
                message.withUnsafeMutableBufferPointer { buf in
                    if let currentJSON {
                        return currentJSON.withCString { validate(ctx.raw, newP, $0, buf.baseAddress, buf.count) }
                    }
                    return validate(ctx.raw, newP, nil, buf.baseAddress, buf.count)
                }
            }
            if ok != 0 { return nil }
            message[message.count - 1] = 0
            return message.withUnsafeBufferPointer { String(validatingCString: $0.baseAddress!) } ?? ""
        }
    }
}

// MARK: local documents

@c @implementation public func cbl_local_get(_ coll: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") { try collection(coll).getLocal(id: try string(id, "local_id")) }
}

@c @implementation public func cbl_local_put(_ coll: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ body: UnsafePointer<CChar>?,
                                             _ parent: UnsafePointer<CChar>?, _ outRevID: OutString?, _ err: ErrorOut?) -> cbl_status {
    outRevID?.pointee = nil
    return abiCall(err) {
        let rev = try collection(coll).putLocal(id: try string(id, "local_id"), json: try string(body, "body_json"),
                                                parent: try optionalString(parent, "parent_rev_id"))
        outRevID?.pointee = cString(rev)
    }
}

@c @implementation public func cbl_local_delete(_ coll: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ parent: UnsafePointer<CChar>?,
                                                _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try collection(coll).deleteLocal(id: try string(id, "local_id"), parent: try optionalString(parent, "parent_rev_id")) }
}
