import CBLiteCore
import CCBLite
import Glibc

// Attachments: the C side of Blobs/ (see "Attachments" in include/cblite.h).

private func blobWriter(_ h: OpaquePointer?) throws -> BlobWriter { try HandleTable.shared.lookup(h, as: BlobWriter.self, "cbl_blob_writer") }
private func blobReader(_ h: OpaquePointer?) throws -> BlobReader { try HandleTable.shared.lookup(h, as: BlobReader.self, "cbl_blob_reader") }

/// (pointer, length) as a buffer: NULL is allowed only for 0 bytes.
private func bytes(_ p: UnsafeRawPointer?, _ n: Int, _ what: String) throws -> UnsafeRawBufferPointer {
    if p == nil && n > 0 { throw CBLError(.badRequest, "\(what) is NULL") }
    return UnsafeRawBufferPointer(start: p, count: n)
}

/// Content stored: its digest through an optional out-parameter (caller frees).
private func digestCall(_ out: OutString?, _ err: ErrorOut?, _ body: () throws -> BlobInfo) -> cbl_status {
    outCall(out, "out_digest", empty: nil, optional: true, err) {
        let info = try body()
        return out == nil ? nil : cString(info.digest.string)   // no receiver: nothing to allocate
    }
}

// MARK: writing content

@c @implementation public func cbl_blob_writer_create(_ db: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                                      _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_writer", empty: nil, err) { HandleTable.shared.register(try database(db).blobStore.makeWriter()) }
}

@c @implementation public func cbl_blob_writer_write(_ w: OpaquePointer?, _ data: UnsafeRawPointer?, _ length: Int,
                                                     _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let writer = try blobWriter(w)
        try writer.write(try bytes(data, length, "data"))
    }
}

@c @implementation public func cbl_blob_writer_finish(_ w: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    digestCall(out, err) {
        let writer = try blobWriter(w)
        HandleTable.shared.remove(w)
        do {
            return try writer.finish()
        } catch {
            writer.cancel()
            throw error
        }
    }
}

@c @implementation public func cbl_blob_writer_cancel(_ w: OpaquePointer?) {
    guard let writer = try? blobWriter(w) else { return }
    HandleTable.shared.remove(w)
    writer.cancel()
}

@c @implementation public func cbl_db_blob_put(_ db: OpaquePointer?, _ data: UnsafeRawPointer?, _ length: Int,
                                              _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    digestCall(out, err) { try database(db).blobStore.put(try bytes(data, length, "data")) }
}

@c @implementation public func cbl_db_blob_import_file(_ db: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ out: OutString?,
                                                      _ err: ErrorOut?) -> cbl_status {
    digestCall(out, err) {
        let store = try database(db).blobStore
        return try store.importFile(path: try string(path, "path"))
    }
}

@c @implementation public func cbl_db_blob_length(_ db: OpaquePointer?, _ digest: UnsafePointer<CChar>?,
                                                 _ out: UnsafeMutablePointer<UInt64>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_length", empty: 0, err) {
        let store = try database(db).blobStore
        return try store.length(of: try BlobDigest.parse(try string(digest, "digest")))
    }
}

// MARK: attachments of documents

@c @implementation public func cbl_doc_set_attachment(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ parent: UnsafePointer<CChar>?,
                                                      _ name: UnsafePointer<CChar>?, _ contentType: UnsafePointer<CChar>?,
                                                      _ digest: UnsafePointer<CChar>?, _ outRev: OutString?,
                                                      _ err: ErrorOut?) -> cbl_status {
    outRev?.pointee = nil
    return abiCall(err) {
        let rev = try collection(coll).setAttachment(docID: try string(docID, "doc_id"), parent: try optionalString(parent, "parent_rev_id"),
                                                     name: try string(name, "name"),
                                                     contentType: try optionalString(contentType, "content_type"),
                                                     digest: try string(digest, "digest"))
        outRev?.pointee = cString(rev)
    }
}

@c @implementation public func cbl_doc_remove_attachment(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ parent: UnsafePointer<CChar>?,
                                                         _ name: UnsafePointer<CChar>?, _ outRev: OutString?,
                                                         _ err: ErrorOut?) -> cbl_status {
    outRev?.pointee = nil
    return abiCall(err) {
        let rev = try collection(coll).removeAttachment(docID: try string(docID, "doc_id"), parent: try optionalString(parent, "parent_rev_id"),
                                                        name: try string(name, "name"))
        outRev?.pointee = cString(rev)
    }
}

@c @implementation public func cbl_doc_attachment_names(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ out: OutString?,
                                                        _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_json", empty: nil, err) {
        let names = try collection(coll).attachmentNames(docID: try string(docID, "doc_id"))
        return cString(JSONWriter.canonical(.array(names.map { .string($0) })))
    }
}

@c @implementation public func cbl_doc_get_attachment(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                                                      _ outBytes: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                                                      _ outLength: UnsafeMutablePointer<Int>?, _ err: ErrorOut?) -> cbl_status {
    outBytes?.pointee = nil
    outLength?.pointee = 0
    return abiCall(err) {
        let ob = try require(outBytes, "out_bytes")
        let ol = try require(outLength, "out_length")
        let content = try collection(coll).attachmentContent(docID: try string(docID, "doc_id"), name: try string(name, "name"))
        guard let p = malloc(max(1, content.count)) else { throw CBLError(.internalError, "out of memory") }
        content.withUnsafeBytes { if let b = $0.baseAddress { memcpy(p, b, content.count) } }
        ob.pointee = p
        ol.pointee = content.count
    }
}

@c @implementation public func cbl_doc_save_attachment_to_file(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?,
                                                               _ name: UnsafePointer<CChar>?, _ path: UnsafePointer<CChar>?,
                                                               _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        try collection(coll).writeAttachment(docID: try string(docID, "doc_id"), name: try string(name, "name"),
                                             toFile: try string(path, "path"))
    }
}

// MARK: reading content

@c @implementation public func cbl_doc_open_attachment(_ coll: OpaquePointer?, _ docID: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                                                       _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_reader", empty: nil, err) {
        let reader = try collection(coll).openAttachment(docID: try string(docID, "doc_id"), name: try string(name, "name"))
        return HandleTable.shared.register(reader)
    }
}

@c @implementation public func cbl_blob_reader_read(_ r: OpaquePointer?, _ buffer: UnsafeMutableRawPointer?, _ capacity: Int,
                                                    _ outRead: UnsafeMutablePointer<Int>?, _ err: ErrorOut?) -> cbl_status {
    outRead?.pointee = 0
    return abiCall(err) {
        let o = try require(outRead, "out_read")
        let reader = try blobReader(r)
        if buffer == nil && capacity > 0 { throw CBLError(.badRequest, "buffer is NULL") }
        o.pointee = try reader.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: capacity))
    }
}

@c @implementation public func cbl_blob_reader_seek(_ r: OpaquePointer?, _ offset: UInt64, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try blobReader(r).seek(to: offset) }
}

@c @implementation public func cbl_blob_reader_length(_ r: OpaquePointer?, _ out: UnsafeMutablePointer<UInt64>?,
                                                      _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_length", empty: 0, err) { try blobReader(r).length }
}

@c @implementation public func cbl_blob_reader_close(_ r: OpaquePointer?) {
    guard let reader = try? blobReader(r) else { return }
    HandleTable.shared.remove(r)
    reader.close()
}
