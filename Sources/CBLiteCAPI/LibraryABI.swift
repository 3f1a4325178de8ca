import CBLiteCore
import CCBLite
import Glibc

nonisolated(unsafe) private let versionString: UnsafeMutablePointer<CChar> = strdup(CBLiteVersion.string)!
nonisolated(unsafe) private let statusNames: [Int32: UnsafeMutablePointer<CChar>] = {
    var d: [Int32: UnsafeMutablePointer<CChar>] = [:]
    for code: Int32 in [0, 400, 401, 403, 404, 406, 409, 412, 500, 501, 503, 507] {
        d[code] = strdup(Status(rawValue: code)!.name)!
    }
    return d
}()
nonisolated(unsafe) private let unknownStatus: UnsafeMutablePointer<CChar> = strdup("unknown status")!

@c @implementation public func cbl_version() -> UnsafePointer<CChar>! { UnsafePointer(versionString) }

@c @implementation public func cbl_version_number() -> Int32 { CBLiteVersion.number }

@c @implementation public func cbl_storage_versions(_ out: OutString?, _ err: ErrorOut?) -> cbl_status {
    outCall(out, "out_json", empty: nil, err) { cString(StorageInfo.versionsJSON()) }
}

@c @implementation public func cbl_free(_ ptr: UnsafeMutableRawPointer?) { free(ptr) }

@c @implementation public func cbl_strdup(_ str: UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>? {
    guard let str else { return nil }
    return strdup(str)
}

@c @implementation public func cbl_instance_count() -> Int64 { Int64(HandleTable.shared.count) }

@c @implementation public func cbl_status_name(_ status: cbl_status) -> UnsafePointer<CChar>! {
    UnsafePointer(statusNames[status] ?? unknownStatus)
}

// MARK: logging

private struct LogCallback: @unchecked Sendable {
    let fn: cbl_log_fn
    let context: UnsafeMutableRawPointer?
}

@c @implementation public func cbl_log_set_callback(_ callback: cbl_log_fn?, _ context: UnsafeMutableRawPointer?) {
    guard let callback else { Log.shared.setSink(nil); return }
    let cb = LogCallback(fn: callback, context: context)
    Log.shared.setSink { domain, level, message in
        message.withCString { cb.fn(cb.context, cbl_log_domain(UInt32(domain.rawValue)), cbl_log_level(UInt32(level.rawValue)), $0) }
    }
}

@c @implementation public func cbl_log_set_level(_ domain: cbl_log_domain, _ level: cbl_log_level, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        guard let d = LogDomain(rawValue: Int32(bitPattern: domain.rawValue)) else { throw CBLError(.badRequest, "unknown log domain \(domain.rawValue)") }
        guard let l = LogLevel(rawValue: Int32(bitPattern: level.rawValue)) else { throw CBLError(.badRequest, "unknown log level \(level.rawValue)") }
        Log.shared.setLevel(d, l)
    }
}

@c @implementation public func cbl_log_get_level(_ domain: cbl_log_domain) -> cbl_log_level {
    guard let d = LogDomain(rawValue: Int32(bitPattern: domain.rawValue)) else { return CBL_LOG_NONE }
    return cbl_log_level(UInt32(Log.shared.level(d).rawValue))
}
