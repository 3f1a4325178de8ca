import CDuktape

/// One JavaScript context (a Duktape heap) under its limits: programs evaluated in its
/// global scope, global functions called with JSON arguments, results as JSON — through
/// the engine's own JSON parser and writer. There is no I/O in it: no module loader, no
/// print; `__cbl_log(text)` reaches the engine's logger (query domain) and nothing else.
/// Not thread-safe: one thread at a time (JSEnginePool hands them out).
public final class JSEngine {
    public let limits: JSLimits
    /// Prefixes its log lines (e.g. the design document's ID).
    public let label: String
    private let handle: OpaquePointer
    private let logBox: LogBox

    /// Carries the label into the C log callback.
    private final class LogBox {
        let label: String
        init(label: String) { self.label = label }
    }

    public init(limits: JSLimits = .current, label: String = "JavaScript") throws {
        self.limits = limits
        self.label = label
        logBox = LogBox(label: label)
        let context = Unmanaged.passUnretained(logBox).toOpaque()
        guard let h = cblite_js_create(limits.memoryBytes, { context, text, length in
            guard let context, let text else { return }
            let box = Unmanaged<LogBox>.fromOpaque(context).takeUnretainedValue()
            let bytes = UnsafeRawBufferPointer(start: text, count: length)
            let line = String(decoding: bytes.prefix(JSEngine.maxLogBytes), as: UTF8.self)
            Loggers.query.info("\(box.label): log: \(line)\(length > JSEngine.maxLogBytes ? "…" : "")")
        }, context) else {
            throw JSFailure.memory(bytes: limits.memoryBytes).cblError
        }
        handle = h
    }

    deinit { cblite_js_destroy(handle) }

    /// A log line's longest text (a script could log megabytes).
    static let maxLogBytes = 4096

    /// Runs `source` as a program in the global scope; returns its completion value.
    @discardableResult
    public func evaluate(_ source: String, fileName: String = "eval") throws -> [UInt8] {
        var source = source
        return try source.withUTF8 { s in
            try run { result in
                s.withMemoryRebound(to: CChar.self) { cblite_js_eval(handle, $0.baseAddress, $0.count, fileName, limits.timeoutMs, &result) }
            }
        }
    }

    /// Calls the global function `name` with the elements of `arguments` (a JSON array's
    /// text); returns its result's JSON ("null" for undefined).
    public func call(_ name: String, argumentsJSON arguments: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        try run { result in
            arguments.withMemoryRebound(to: CChar.self) { cblite_js_call(handle, name, $0.baseAddress, $0.count, limits.timeoutMs, &result) }
        }
    }

    /// Calls `name`, which returns rows ([key, value] pairs: a map function's), and gives
    /// each row's key and value as JSON, each followed by a newline — no JSON text of the
    /// whole result to write and parse again.
    public func callRows(_ name: String, argumentsJSON arguments: [UInt8]) throws -> [UInt8] {
        try arguments.withUnsafeBufferPointer { a in
            try run { result in
                a.withMemoryRebound(to: CChar.self) { cblite_js_call_rows(handle, name, $0.baseAddress, $0.count, limits.timeoutMs, &result) }
            }
        }
    }

    public func call(_ name: String, argumentsJSON arguments: [UInt8]) throws -> [UInt8] {
        try arguments.withUnsafeBufferPointer { a in try call(name, argumentsJSON: a) }
    }

    /// Calls `name` with `arguments`, written as JSON; the result parsed.
    public func call(_ name: String, _ arguments: [JSONValue]) throws -> JSONValue {
        let out = try call(name, argumentsJSON: JSONWriter.ordered(.array(arguments)))
        return try out.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) }
    }

    /// Bytes the heap holds now.
    public var memoryUsed: Int { cblite_js_memory_used(handle) }

    private func run(_ body: (inout cblite_js_result) -> Int32) throws -> [UInt8] {
        var result = cblite_js_result()
        let status = body(&result)
        defer { cblite_js_result_free(&result) }
        let text = result.text.map { Array(UnsafeRawBufferPointer(start: $0, count: result.length)) } ?? []
        switch Int(status) {
        case CBLITE_JS_OK: return text
        case CBLITE_JS_TIMEOUT: throw JSFailure.timeout(ms: limits.timeoutMs)
        case CBLITE_JS_MEMORY: throw JSFailure.memory(bytes: limits.memoryBytes)
        default:
            let described = try? text.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
            let message: String
            if case .string(let m)? = described?["message"] { message = m } else { message = "Error" }
            throw JSFailure.threw(message: message, thrown: described?["thrown"])
        }
    }
}
