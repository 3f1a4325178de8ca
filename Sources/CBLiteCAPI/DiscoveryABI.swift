import CBLiteCore
import CBLiteDiscovery
import CBLiteListener
import CCBLite
import Glibc

// Discovery (include/cblite.h, "Discovery"): a cbl_browser handle owns a
// CBLiteDiscovery.PeerBrowser; releasing the handle stops it. The listener's advertisement
// is read through its cbl_server handle.

private func browser(_ h: OpaquePointer?) throws -> PeerBrowser { try HandleTable.shared.lookup(h, as: PeerBrowser.self, "cbl_browser") }

@c @implementation public func cbl_browser_start(_ type: UnsafePointer<CChar>?, _ callback: cbl_browser_fn?,
                                                 _ context: UnsafeMutableRawPointer?,
                                                 _ out: UnsafeMutablePointer<OpaquePointer?>?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_browser", empty: nil, err) {
        guard let callback else { throw CBLError(.badRequest, "callback must not be NULL") }
        let ctx = Context(raw: context)
        let b = try PeerBrowser(type: try optionalString(type, "type") ?? ServiceType.couchDB) { event in
            let text = cString(JSONWriter.ordered(.object(event.json)))
            callback(ctx.raw, text)
            free(text)
        }
        return HandleTable.shared.register(b)
    }
}

@c @implementation public func cbl_browser_peers(_ h: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") { JSONWriter.ordered(.array(try browser(h).peers.map { .object($0.json) })) }
}

@c @implementation public func cbl_browser_stop(_ h: OpaquePointer?) {
    // Only a browser handle is released: another kind passed by mistake stays valid.
    guard let b = try? browser(h) else { return }
    HandleTable.shared.remove(h)
    b.stop()
}

@c @implementation public func cbl_server_advertisement(_ s: OpaquePointer?, _ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    jsonCall(out, err, "out_json") {
        let l = try HandleTable.shared.lookup(s, as: Listener.self, "cbl_server")
        guard let a = l.advertisement else { throw CBLError(.notFound, "the listener is not advertised") }
        var o = JSONObject([("name", .string(a.name)), ("type", .string(a.type)), ("port", .int(Int64(a.port))),
                            ("txt", .array(a.txt.map { .string($0) }))])
        switch a.state {
        case .registering: o["state"] = .string("registering")
        case .established: o["state"] = .string("established")
        case .failed(let message): o["state"] = .string("failed"); o["error"] = .string(message)
        }
        return JSONWriter.ordered(.object(o))
    }
}
