import CBLiteCore
import CCBLite

@c @implementation public func cbl_js_set_limits(_ timeoutMs: UInt32, _ memoryBytes: UInt64, _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        guard memoryBytes >= JSLimits.minimumMemoryBytes, memoryBytes <= UInt64(Int.max) else {
            throw CBLError.badRequest("memory_bytes must be at least \(JSLimits.minimumMemoryBytes) (1 MiB)")
        }
        JSLimits.current = JSLimits(timeoutMs: timeoutMs, memoryBytes: Int(memoryBytes))
    }
}

@c @implementation public func cbl_js_get_limits(_ outTimeoutMs: UnsafeMutablePointer<UInt32>?, _ outMemoryBytes: UnsafeMutablePointer<UInt64>?,
                                                  _ err: ErrorOut?) -> cbl_status {
    abiCall(err) {
        guard let outTimeoutMs, let outMemoryBytes else { throw CBLError.badRequest("out_timeout_ms or out_memory_bytes is NULL") }
        let l = JSLimits.current
        outTimeoutMs.pointee = l.timeoutMs
        outMemoryBytes.pointee = UInt64(l.memoryBytes)
    }
}
