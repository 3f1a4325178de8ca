import CBLiteCore
import CBLiteListener
import CCBLite
import Glibc

// The listener (include/cblite.h, "Listener"): a cbl_server handle owns a running
// CBLiteListener.Listener; releasing the handle stops it.

private func server(_ h: OpaquePointer?) throws -> Listener { try HandleTable.shared.lookup(h, as: Listener.self, "cbl_server") }

@c @implementation public func cbl_server_start(_ config: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                                _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_server", empty: nil, err) {
        let listener = try Listener(configuration: try optionalString(config, "config_json") ?? "{}")
        try listener.start()
        return HandleTable.shared.register(listener)
    }
}

@c @implementation public func cbl_server_serve(_ s: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ db: OpaquePointer?,
                                                _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        let l = try server(s)
        let n = try string(name, "name")
        try l.serve(name: n, database: try db.map { try database($0) })
    }
}

@c @implementation public func cbl_server_port(_ s: OpaquePointer?, _ out: UnsafeMutablePointer<UInt16>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_port", empty: 0, err) { UInt16(clamping: try server(s).port) }
}

@c @implementation public func cbl_server_url(_ s: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_url") { Array(try server(s).url.utf8) }
}

@c @implementation public func cbl_server_tls_fingerprint(_ s: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_sha256") {
        guard let fp = try server(s).tlsCertificateSHA256 else { throw CBLError(.notFound, "the listener does not use TLS") }
        return Array(fp.utf8)
    }
}

@c @implementation public func cbl_server_stop(_ s: OpaquePointer?, _ timeoutMs: Int32) {
    // Only a server handle is released: another kind of handle passed by mistake stays valid.
    guard let l = try? server(s) else { return }
    HandleTable.shared.remove(s)
    l.stop(timeoutMs: Int(max(0, timeoutMs)))
}
