import CBLiteCore
import CCBLite
import CouchWire
import Glibc

// The replication surface (include/cblite.h, "Replication surface"): JSON in CouchDB's
// shapes in and out, read and written by CouchWire — the same code that answers these
// requests over HTTP in the listener.

/// The options object of `cbl_doc_open_revs` / `cbl_collection_docs_bulk_get` (NULL: none): CouchDB's
/// read options plus `follows`; an unknown member is a 400.
private func revisionOptions(_ options: UnsafePointer<CChar>?) throws -> RevisionOptions {
    let source = try JSONOptionSource(json: try optionalString(options, "options_json"))
    try source.requireKnown(RevisionOptionsReader.names)
    return try RevisionOptionsReader.read(source, allowFollows: true)
}

@c @implementation public func cbl_collection_revs_diff(_ coll: OpaquePointer?, _ request: UnsafePointer<CChar>?, _ out: OutString?,
                                             _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let c = try collection(coll)
        let req = try RevsDiffShape.request(try jsonObject(request, "request_json"))
        return RevsDiffShape.answer(try c.revsDiff(req))
    }
}

@c @implementation public func cbl_collection_docs_put_existing(_ coll: OpaquePointer?, _ docs: UnsafePointer<CChar>?, _ out: OutString?,
                                                     _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let c = try collection(coll)
        let objects = try BulkDocsShape.request(try jsonValue(docs, "docs_json", message: true), allowArray: true).docs
        return BulkDocsShape.answer(try c.insertExistingRevisions(objects.map { Collection.ExistingRevision(body: $0) }))
    }
}

@c @implementation public func cbl_collection_docs_save(_ coll: OpaquePointer?, _ docs: UnsafePointer<CChar>?, _ out: OutString?,
                                             _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let c = try collection(coll)
        let objects = try BulkDocsShape.request(try jsonValue(docs, "docs_json", message: true), allowArray: true).docs
        return BulkDocsShape.answer(try c.saveDocuments(objects))
    }
}

@c @implementation public func cbl_doc_open_revs(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ revs: UnsafePointer<CChar>?,
                                                 _ options: UnsafePointer<CChar>?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let c = try collection(coll)
        let id = try string(docID, "doc_id")
        let wanted = try OpenRevsShape.request(json: try optionalString(revs, "revs_json"))
        let o = try revisionOptions(options)
        return OpenRevsShape.answer(try c.openRevs(docID: id, revs: wanted, options: o))
    }
}

@c @implementation public func cbl_collection_docs_bulk_get(_ coll: OpaquePointer?, _ request: UnsafePointer<CChar>?, _ options: UnsafePointer<CChar>?,
                                                 _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let c = try collection(coll)
        let req = try BulkGetShape.request(try jsonObject(request, "request_json"))
        let o = try revisionOptions(options)
        return BulkGetShape.answer(try c.bulkGet(req, options: o))
    }
}

@c @implementation public func cbl_doc_purge_revisions(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ revs: UnsafePointer<CChar>?,
                                                       _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    out?.pointee = nil
    return abiCall(err) {
        let c = try collection(coll)
        let id = try string(docID, "doc_id")
        guard let wanted = try OpenRevsShape.request(json: try string(revs, "revs_json")) else {
            throw CBLError(.badRequest, "revs_json must be an array of revision IDs")
        }
        let purged = try c.purge(docID: id, revs: wanted)
        out?.pointee = cString(purged.jsonArrayString)
    }
}

@c @implementation public func cbl_collection_changes_wait(_ coll: OpaquePointer?, _ since: UInt64, _ timeoutMs: Int32,
                                                _ out: UnsafeMutablePointer<Int32>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_changed", empty: 0, err) { try collection(coll).waitForChanges(after: Int64(clamping: since), timeoutMs: Int(max(0, timeoutMs))) ? 1 : 0 }
}

@c @implementation public func cbl_db_set_filter(_ db: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ fn: cbl_filter_fn?,
                                                 _ context: UnsafeMutableRawPointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let d = try database(db)
        let n = try string(name, "name")
        guard let fn else { try d.setFilter(name: n, nil); return }
        let ctx = Context(raw: context)
        try d.setFilter(name: n) { doc, params in
            let paramsJSON = JSONWriter.ordered(.object(params)) + [0]
            let docJSON = doc + [0]
            return docJSON.withUnsafeBufferPointer { d in
                paramsJSON.withUnsafeBufferPointer { p in
                    d.baseAddress!.withMemoryRebound(to: CChar.self, capacity: d.count) { dp in
                        p.baseAddress!.withMemoryRebound(to: CChar.self, capacity: p.count) { fn(ctx.raw, dp, $0) != 0 }
                    }
                }
            }
        }
    }
}

@c @implementation public func cbl_db_uuid(_ db: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_uuid") { Array(try database(db).uuid.utf8) }
}

@c @implementation public func cbl_local_list(_ coll: OpaquePointer?, _ includeDocs: Int32, _ out: OutString?,
                                              _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") { try collection(coll).localDocumentsJSON(includeDocs: includeDocs != 0) }
}
