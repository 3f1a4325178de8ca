import CBLiteCore
import CCBLite
import Glibc

// Views, queries and all-docs queries (see "Views and queries" in include/cblite.h).

func view(_ h: OpaquePointer?) throws -> View { try HandleTable.shared.lookup(h, as: View.self, "cbl_view") }

/// The emitter handed to a C map callback: records the first emit error. One box (and
/// handle) serves every map call of one index update; it accepts emits only during a
/// call, and its handle is released with the emitter.
final class EmitterBox {
    /// Not retained (the emitter owns its box through `context`), and read only while a
    /// map call runs (`active`), when the update that owns the emitter holds it: no weak
    /// reference to load and retain on every emit.
    private unowned(unsafe) let emitter: Emitter
    var error: CBLError?
    var active = false
    private(set) var handle: OpaquePointer? = nil

    private init(_ e: Emitter) { emitter = e }

    /// The box of an emitter, made and registered on its first map call.
    static func of(_ emitter: Emitter) -> EmitterBox {
        if let box = emitter.context as? EmitterBox { return box }
        let box = EmitterBox(emitter)
        let handle = HandleTable.shared.register(box)
        box.handle = handle
        emitter.context = box
        emitter.onRelease = { HandleTable.shared.remove(handle) }
        return box
    }

    /// The emitter, when a map call is running.
    func current() throws -> Emitter {
        guard active else { throw CBLError(.badRequest, "cbl_emitter_emit called outside its map callback") }
        return emitter
    }
}

/// A query result handle: its enumerator, which owns the memory of the rows it lends.
final class QueryResultBox {
    let enumerator: QueryEnumerator
    /// A Mango find's cursor (cbl_query_result_find_info), nil for other results.
    let find: FindCursor?
    /// A search's bookmark (cbl_query_result_search_info), nil for other results.
    var search: SearchInfo? = nil

    init(_ e: QueryEnumerator, find: FindCursor? = nil) { enumerator = e; self.find = find }

    /// Fills `row` with the next row; false at the end. The strings point into the
    /// enumerator's pages (each text is followed by a 0 byte) and stay valid until the
    /// next call, as the header promises: nothing is copied per row.
    func next(_ row: UnsafeMutablePointer<cbl_query_row>) throws -> Bool {
        var r = QueryRowRef()
        guard try enumerator.next(into: &r) else { return false }
        row.pointee = QueryResultBox.cRow(r)
        return true
    }

    /// Fills up to `capacity` rows, lent together by the enumerator; returns how many.
    func nextRows(_ rows: UnsafeMutablePointer<cbl_query_row>, capacity: Int) throws -> Int {
        try enumerator.nextRows(max: capacity) { first, run in
            for i in 0..<run.count { rows[first + i] = QueryResultBox.cRow(run[i]) }
        }
    }

    @inline(__always)   // called apart, the row was copied to be passed (a memcpy a row)
    private static func cRow(_ r: QueryRowRef) -> cbl_query_row {
        // Lent texts always have an address (the arena's); no trap checked per field and row.
        func c(_ b: UnsafeBufferPointer<UInt8>?) -> UnsafePointer<CChar>? {
            UnsafeRawPointer(b?.baseAddress)?.assumingMemoryBound(to: CChar.self)
        }
        return cbl_query_row(key_json: c(r.key), value_json: c(r.value), doc_id: c(r.docID),
                             source_doc_id: c(r.sourceDocID), doc_json: c(r.doc), error: c(r.error),
                             sequence: UInt64(max(0, r.sequence)))
    }
}

private func resultCall(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?,
                        _ run: () throws -> QueryEnumerator) -> cbl_status {
    handleCall(out, "out_result", err) { QueryResultBox(try run()) }
}

/// A query whose whole result comes back as one JSON text.
private func queryJSONCall(_ out: OutString?, _ err: ErrorOut?, _ run: () throws -> QueryEnumerator) -> cbl_status {
    jsonCall(out, err, "out_json") { try run().json() }
}

private func options(_ p: UnsafePointer<CChar>?) throws -> QueryOptions {
    try QueryOptions(json: try optionalString(p, "options_json"))
}

/// A JSON array of JSON texts.
private func jsonArray(_ items: [[UInt8]]) -> [UInt8] {
    var out: [UInt8] = [UInt8(ascii: "[")]
    for (i, it) in items.enumerated() {
        if i > 0 { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: it)
    }
    out.append(UInt8(ascii: "]"))
    return out
}

@c @implementation public func cbl_emitter_emit(_ emitter: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?,
                                        _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let box = try HandleTable.shared.lookup(emitter, as: EmitterBox.self, "cbl_emitter")
        let emit = try box.current()
        do {
            try withJSONBytes(key, "key_json") { k in
                if let value {
                    try withJSONBytes(value, "value_json") { v in try emit.emit(keyJSON: k, valueJSON: v) }
                } else {
                    try emit.emit(keyJSON: k, valueJSON: nil)
                }
            }
        } catch let e as CBLError {
            if box.error == nil { box.error = e }
            throw e
        }
    }
}

@c @implementation public func cbl_emitter_emit_text(_ emitter: OpaquePointer?, _ text: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?,
                                             _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let box = try HandleTable.shared.lookup(emitter, as: EmitterBox.self, "cbl_emitter")
        let emit = try box.current()
        do {
            let t = try string(text, "text")
            if let value {
                try withJSONBytes(value, "value_json") { v in try emit.emit(text: t, valueJSON: v) }
            } else {
                try emit.emit(text: t, valueJSON: nil)
            }
        } catch let e as CBLError {
            if box.error == nil { box.error = e }
            throw e
        }
    }
}

@c @implementation public func cbl_collection_view(_ coll: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                                   _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_view", empty: nil, err) { HandleTable.shared.register(try collection(coll).view(named: try string(name, "name"))) }
}

@c @implementation public func cbl_view_set_map_reduce(_ v: OpaquePointer?, _ map: cbl_map_fn?, _ reduce: cbl_reduce_fn?,
                                                       _ builtin: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?,
                                                       _ context: UnsafeMutableRawPointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let theView = try view(v)
        let ver = try string(version, "version")
        let builtinName = try optionalString(builtin, "builtin_reduce")
        var custom: Reducer? = nil
        let ctx = Context(raw: context)
        if let reduce {
            custom = .custom({ keys, values, rereduce in
                let keysText: [UInt8]? = keys.map { jsonArray($0) }
                var valuesText = jsonArray(values)
                valuesText.append(0)
                let result: UnsafeMutablePointer<CChar>? = valuesText.withUnsafeBufferPointer { vb in
                    let vp = UnsafeRawPointer(vb.baseAddress!).assumingMemoryBound(to: CChar.self)
                    if var kt = keysText {
                        kt.append(0)
                        return kt.withUnsafeBufferPointer { kb in
                            reduce(ctx.raw, UnsafeRawPointer(kb.baseAddress!).assumingMemoryBound(to: CChar.self), vp, rereduce ? 1 : 0)
                        }
                    }
                    return reduce(ctx.raw, nil, vp, rereduce ? 1 : 0)
                }
                guard let result else { throw CBLError(.internalError, "the reduce function returned NULL") }
                defer { free(result) }
                let n = strlen(result)
                return try result.withMemoryRebound(to: UInt8.self, capacity: n) {
                    try Collation.compactJSON(json: UnsafeBufferPointer(start: $0, count: n))
                }
            })
        }
        let reducer = try Reducer.chosen(builtin: builtinName, custom: custom)
        guard let map else {
            theView.setMapReduce(map: nil, reduce: nil, version: ver)
            return
        }
        theView.setMapReduce(map: { doc, emitter in
            let box = EmitterBox.of(emitter)
            box.active = true
            box.error = nil
            defer { box.active = false }
            doc.withCString { map(ctx.raw, $0, box.handle) }
            if let e = box.error { throw e }
        }, reduce: reducer, version: ver)
    }
}

@c @implementation public func cbl_view_update(_ v: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try view(v).updateIndex() }
}

@c @implementation public func cbl_view_info(_ v: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") { try view(v).infoJSON() }
}

@c @implementation public func cbl_view_delete(_ v: OpaquePointer?, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) { try view(v).delete() }
}

@c @implementation public func cbl_view_set_text_analyzer(_ v: OpaquePointer?, _ analyzer: UnsafePointer<CChar>?,
                                                  _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let theView = try view(v)
        let a = try withJSONBytes(analyzer, "analyzer_json") { try FullTextAnalyzer(json: JSONParser.parse(bytes: $0)) }
        theView.textAnalyzer = a
    }
}

@c @implementation public func cbl_view_release(_ v: OpaquePointer?) {
    guard let theView = try? view(v) else { return }
    HandleTable.shared.remove(v)
    theView.waitForBackgroundUpdates()     // none of its callbacks runs after this returns
}

@c @implementation public func cbl_collection_view_names(_ coll: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_json", empty: nil, err) { cString(try collection(coll).viewNames().jsonArrayString) }
}

@c @implementation public func cbl_view_query_json(_ v: OpaquePointer?, _ opts: UnsafePointer<CChar>?, _ out: OutString?,
                                                   _ err: ErrorOut?) -> cbl_status {
    queryJSONCall(out, err) { try view(v).query(try options(opts)) }
}

@c @implementation public func cbl_view_query(_ v: OpaquePointer?, _ opts: UnsafePointer<CChar>?,
                                              _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    resultCall(out, err) { try view(v).query(try options(opts)) }
}

@c @implementation public func cbl_query_result_next(_ result: OpaquePointer?, _ row: UnsafeMutablePointer<cbl_query_row>?,
                                                     _ hasRow: UnsafeMutablePointer<Int32>?, _ err: ErrorOut?) -> cbl_status {
    hasRow?.pointee = 0
    return abiCall(err) {
        let h = try require(hasRow, "out_has_row")
        let r = try require(row, "row")
        let box = try HandleTable.shared.lookup(result, as: QueryResultBox.self, "cbl_query_result")
        h.pointee = try box.next(r) ? 1 : 0
    }
}

@c @implementation public func cbl_query_result_next_rows(_ result: OpaquePointer?, _ rows: UnsafeMutablePointer<cbl_query_row>?,
                                                          _ capacity: Int, _ outCount: UnsafeMutablePointer<Int>?,
                                                          _ err: ErrorOut?) -> cbl_status {
    outCount?.pointee = 0
    return abiCall(err) {
        let count = try require(outCount, "out_count")
        let r = try require(rows, "rows")
        // size_t arrives as Int: a capacity above Int.max is negative here.
        guard capacity > 0 else {
            throw CBLError(.badRequest, capacity == 0 ? "capacity is 0" : "capacity is larger than any array of rows")
        }
        guard capacity <= Int.max / MemoryLayout<cbl_query_row>.stride else {
            throw CBLError(.badRequest, "capacity is larger than any array of rows")
        }
        let box = try HandleTable.shared.lookup(result, as: QueryResultBox.self, "cbl_query_result")
        count.pointee = try box.nextRows(r, capacity: capacity)
    }
}

@c @implementation public func cbl_query_result_is_stale(_ result: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?,
                                                         _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_stale", empty: 0, err) {
        let box = try HandleTable.shared.lookup(result, as: QueryResultBox.self, "cbl_query_result")
        return try box.enumerator.isStale ? 1 : 0
    }
}

@c @implementation public func cbl_query_result_json(_ result: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_json", empty: nil, err) {
        let box = try HandleTable.shared.lookup(result, as: QueryResultBox.self, "cbl_query_result")
        return cString(try box.enumerator.json())
    }
}

@c @implementation public func cbl_query_result_release(_ result: OpaquePointer?) {
    if (try? HandleTable.shared.lookup(result, as: QueryResultBox.self, "cbl_query_result")) != nil {
        HandleTable.shared.remove(result)
    }
}

@c @implementation public func cbl_collection_all_docs(_ coll: OpaquePointer?, _ opts: UnsafePointer<CChar>?, _ out: OutString?,
                                                       _ err: ErrorOut?) -> cbl_status {
    queryJSONCall(out, err) { try collection(coll).allDocsQuery(try options(opts)) }
}

@c @implementation public func cbl_collection_all_docs_query(_ coll: OpaquePointer?, _ opts: UnsafePointer<CChar>?,
                                                             _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    resultCall(out, err) { try collection(coll).allDocsQuery(try options(opts)) }
}
