import CBLiteCore
import CCBLite

/// cbl_collection_salvage: Documents/Salvage.swift through the ABI.
@c @implementation public func cbl_collection_salvage(_ coll: OpaquePointer?, _ each: cbl_revision_fn?, _ context: UnsafeMutableRawPointer?,
                                                      _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_report", empty: nil, optional: true, err) {
        let c = try collection(coll)
        guard let each else { throw CBLError(.badRequest, "each is NULL") }
        let report = try c.salvage { json in
            var z = json
            z.append(0)
            z.withUnsafeBufferPointer { buf in
                buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) { each(context, $0) }
            }
        }
        // The report is optional: made only when asked for (nobody would free it otherwise).
        return out == nil ? nil : cString(report.json)
    }
}
