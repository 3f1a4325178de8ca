import CBLiteCore
import CBLiteReplicator
import CCBLite
import Glibc

// The replicator (include/cblite.h, "Replication"): a cbl_replicator handle owns a
// CBLiteReplicator.Replicator; releasing the handle stops it.

private func replicator(_ h: OpaquePointer?) throws -> Replicator {
    try HandleTable.shared.lookup(h, as: Replicator.self, "cbl_replicator")
}

@c @implementation public func cbl_replicator_start(_ c: OpaquePointer?, _ config: UnsafePointer<CChar>?,
                                                    _ onStatus: cbl_replicator_status_fn?, _ onDocuments: cbl_replicator_document_fn?,
                                                    _ context: UnsafeMutableRawPointer?,
                                                    _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_replicator", empty: nil, err) {
        let coll = try collection(c)
        let configuration = try ReplicatorConfiguration(json: try string(config, "config_json"))
        let ctx = Context(raw: context)
        var statusCallback: Replicator.StatusCallback? = nil
        if let onStatus {
            statusCallback = { status in cString(JSONWriter.ordered(.object(status.json))).withFreed { onStatus(ctx.raw, $0) } }
        }
        var documentCallback: Replicator.DocumentCallback? = nil
        if let onDocuments {
            documentCallback = { docs in cString(Replicator.documentsJSON(docs)).withFreed { onDocuments(ctx.raw, $0) } }
        }
        let r = try Replicator(collection: coll, configuration: configuration, onStatus: statusCallback, onDocuments: documentCallback)
        try r.start()
        return HandleTable.shared.register(r)
    }
}

@c @implementation public func cbl_replicator_status(_ h: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_status_json") { try replicator(h).statusJSON }
}

@c @implementation public func cbl_replicator_wait(_ h: OpaquePointer?, _ timeoutMs: Int32, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let r = try replicator(h)
        guard r.waitUntilStopped(timeoutMs: timeoutMs < 0 ? nil : Int(timeoutMs)) else {
            throw CBLError(.busy, "the replication is still running")
        }
    }
}

@c @implementation public func cbl_replicator_pending_documents(_ h: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") { JSONWriter.ordered(.array(try replicator(h).pendingDocumentIDs().map { .string($0) })) }
}

@c @implementation public func cbl_replicator_is_document_pending(_ h: OpaquePointer?, _ docID: UnsafePointer<CChar>?,
                                                                  _ out: UnsafeMutablePointer<Int32>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_pending", empty: 0, err) { try replicator(h).isDocumentPending(try string(docID, "doc_id")) ? 1 : 0 }
}

@c @implementation public func cbl_replicator_failed_documents(_ h: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") { try replicator(h).failedDocumentsJSON }
}

@c @implementation public func cbl_replicator_clear_failed(_ h: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try replicator(h).clearFailedDocuments() }
}

@c @implementation public func cbl_replicator_stop(_ h: OpaquePointer?) {
    // Only a replicator handle is released: another kind passed by mistake stays valid.
    guard let r = try? replicator(h) else { return }
    HandleTable.shared.remove(h)
    r.stop()
}

private extension UnsafeMutablePointer where Pointee == CChar {
    /// Hands the C string to `body`, then frees it.
    func withFreed(_ body: (UnsafePointer<CChar>) -> Void) {
        body(UnsafePointer(self))
        free(self)
    }
}
