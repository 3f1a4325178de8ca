import CBLiteCore
import CCBLite
import CouchWire
import Glibc

@c @implementation public func cbl_collection_changes(_ coll: OpaquePointer?, _ since: UInt64, _ options: UnsafePointer<CChar>?,
                                                      _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_json", empty: nil, err) {
        let opts = try ChangesOptions(json: try optionalString(options, "options_json"))
        var feed = ChangesWriter.Document()
        let last = try collection(coll).visitChanges(since: Int64(clamping: since), options: opts) { feed.add($0) }
        return cString(feed.finish(lastSeq: last))
    }
}

/// Wraps a C change callback: builds the cbl_change array, valid during the call.
private func changeCallback(_ fn: cbl_change_fn, _ context: UnsafeMutableRawPointer?) -> ([ChangeEvent]) -> Void {
    let ctx = Context(raw: context)
    return { events in
        var strings: [UnsafeMutablePointer<CChar>] = []
        strings.reserveCapacity(events.count * 2)
        let changes = events.map { e -> cbl_change in
            let id = strdup(e.docID)!, rev = strdup(e.revID)!
            strings.append(id)
            strings.append(rev)
            return cbl_change(doc_id: id, rev_id: rev, sequence: UInt64(e.sequence), deleted: e.deleted ? 1 : 0, external: e.external ? 1 : 0)
        }
        changes.withUnsafeBufferPointer { fn(ctx.raw, $0.baseAddress, $0.count) }
        for s in strings { free(s) }
    }
}

private func observerCall(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?, _ callback: cbl_change_fn?,
                          _ add: (@escaping ([ChangeEvent]) -> Void) throws -> ChangeObserverToken,
                          _ context: UnsafeMutableRawPointer?) -> cbl_status {
    handleCall(out, "out_token", err) {
        guard let callback else { throw CBLError(.badRequest, "callback is NULL") }
        return try add(changeCallback(callback, context))
    }
}

@c @implementation public func cbl_collection_add_change_listener(_ coll: OpaquePointer?, _ callback: cbl_change_fn?, _ context: UnsafeMutableRawPointer?,
                                                                  _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    observerCall(out, err, callback, { try collection(coll).addChangeObserver($0) }, context)
}

@c @implementation public func cbl_collection_add_document_listener(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?,
                                                                    _ callback: cbl_change_fn?, _ context: UnsafeMutableRawPointer?,
                                                                    _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    observerCall(out, err, callback, { try collection(coll).addChangeObserver(docID: try string(docID, "doc_id"), $0) }, context)
}

@c @implementation public func cbl_db_add_change_listener(_ db: OpaquePointer?, _ callback: cbl_change_fn?, _ context: UnsafeMutableRawPointer?,
                                                          _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    observerCall(out, err, callback, { try database(db).defaultCollection().addChangeObserver($0) }, context)
}

@c @implementation public func cbl_listener_token_remove(_ token: OpaquePointer?) {
    guard let t = try? HandleTable.shared.lookup(token, as: ChangeObserverToken.self, "cbl_listener_token") else { return }
    HandleTable.shared.remove(token)
    t.remove()
}
