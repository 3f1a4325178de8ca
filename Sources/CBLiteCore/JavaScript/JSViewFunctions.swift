/// A design document's view as the functions a View runs: the JavaScript map is one more
/// MapFunction over the same persistent, incremental index native views have, and the
/// reduce is a built-in (computed natively) or a JavaScript function (with rereduce).
enum JSViewFunctions {
    /// Calls the view's map on each document in a context held for the whole index update
    /// (Emitter.context). A map that throws, loops or runs out of memory skips that
    /// document only (its rows are dropped), as CouchDB does, and is logged.
    static func map(_ ddoc: DesignDocument, _ view: String) -> MapFunction {
        let prefix = Array("[".utf8) + JSONWriter.ordered(.string(view)) + Array(",".utf8)
        let path = "\(ddoc.id)/_view/\(view)"
        return { doc, emitter in
            let lease = try Lease.of(emitter, ddoc)
            var args = prefix
            args += doc.json
            args.append(UInt8(ascii: "]"))
            let out: [UInt8]
            do {
                out = try lease.engine().callRows("__cbl_map", argumentsJSON: args)
            } catch let failure as JSFailure {
                if case .threw = failure {} else { lease.drop() }
                Loggers.query.warning("\(path): the map function failed on document \"\(doc.docID)\", which the view skips: \(failure)")
                return
            }
            // "key\nvalue\n" per row: emitted as JSON texts, as the C API's maps emit.
            try out.withUnsafeBufferPointer { text in
                var start = 0, key: UnsafeBufferPointer<UInt8>? = nil
                for i in 0..<text.count where text[i] == 0x0A {
                    let line = UnsafeBufferPointer(rebasing: text[start..<i])
                    start = i + 1
                    if let k = key {
                        try emitter.emit(keyJSON: k, valueJSON: line)
                        key = nil
                    } else {
                        key = line
                    }
                }
            }
        }
    }

    /// The view's reduce: nil for none, a built-in by name, or the JavaScript function.
    static func reducer(_ source: String?, _ ddoc: DesignDocument, _ view: String) throws -> Reducer? {
        guard let source else { return nil }
        let name = trimmed(source)
        if name.hasPrefix("_") {
            guard let r = Reducer(builtin: name) else {
                throw CBLError.badRequest("\(ddoc.id)/_view/\(view): unknown built-in reduce \"\(name.prefix(80))\"")
            }
            return r
        }
        let viewJSON = JSONWriter.ordered(.string(view))
        return .couch { keys, values, rereduce in
            // CouchDB's arguments: keys as [key, doc ID] pairs (Reduction makes them), null
            // when rereducing.
            var args = Array("[".utf8) + viewJSON + Array(",".utf8)
            if let keys {
                args.append(UInt8(ascii: "["))
                for (i, k) in keys.enumerated() {
                    if i > 0 { args.append(UInt8(ascii: ",")) }
                    args += k
                }
                args.append(UInt8(ascii: "]"))
            } else {
                args += Array("null".utf8)
            }
            args.append(UInt8(ascii: ","))
            args.append(UInt8(ascii: "["))
            for (i, v) in values.enumerated() {
                if i > 0 { args.append(UInt8(ascii: ",")) }
                args += v
            }
            args += Array("],\(rereduce)]".utf8)
            do {
                return try ddoc.withEngine { try $0.call("__cbl_reduce", argumentsJSON: args) }
            } catch let failure as JSFailure {
                throw CBLError(.internalError, "\(ddoc.id)/_view/\(view): the reduce function failed: \(failure)")
            }
        }
    }

    private static func trimmed(_ s: String) -> String {
        let u = Array(s.utf8)
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        guard let first = u.firstIndex(where: { !isSpace($0) }), let last = u.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: u[first...last], as: UTF8.self)
    }

    /// The context one index update maps with: taken at its first document, given back
    /// when the update ends (the emitter's release); one that ran out of time or memory is
    /// dropped and the next document takes another.
    final class Lease {
        let ddoc: DesignDocument
        private var held: JSEngine?

        init(_ ddoc: DesignDocument) { self.ddoc = ddoc }

        static func of(_ emitter: Emitter, _ ddoc: DesignDocument) throws -> Lease {
            if let lease = emitter.context as? Lease { return lease }
            let lease = Lease(ddoc)
            emitter.context = lease
            emitter.onRelease = { [lease] in lease.release() }
            return lease
        }

        func engine() throws -> JSEngine {
            if let held { return held }
            let e = try ddoc.takeEngine()
            held = e
            return e
        }

        func drop() { held = nil }

        func release() {
            if let held { ddoc.give(held) }
            held = nil
        }
    }
}
