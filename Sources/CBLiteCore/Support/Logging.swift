import Logging
import Glibc

/// Log domains and levels as in include/cblite.h. Engine code logs through swift-log
/// `Logger`s whose handler applies the per-domain level and forwards to the C callback
/// (or stderr). No global LoggingSystem.bootstrap: the host program owns that.
public enum LogDomain: Int32, CaseIterable, Sendable {
    case database = 0, storage, changes, query, replication, listener
    /// Spelled out: interpolating the case (`"\(self)"`) prints it through reflection,
    /// which pages in the runtime's mirror and demangler code on every open.
    var name: String {
        switch self {
        case .database: return "database"
        case .storage: return "storage"
        case .changes: return "changes"
        case .query: return "query"
        case .replication: return "replication"
        case .listener: return "listener"
        }
    }
    var label: String { "cblite." + name }
}

public enum LogLevel: Int32, Comparable, Sendable {
    case debug = 0, verbose, info, warning, error, none
    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    init(_ l: Logger.Level) {
        switch l {
        case .trace: self = .debug
        case .debug: self = .verbose
        case .info, .notice: self = .info
        case .warning: self = .warning
        case .error, .critical: self = .error
        }
    }

    var swiftLogLevel: Logger.Level {
        switch self {
        case .debug: return .trace
        case .verbose: return .debug
        case .info: return .info
        case .warning: return .warning
        case .error, .none: return .error
        }
    }
}

public typealias LogSink = @Sendable (LogDomain, LogLevel, String) -> Void

public final class Log: @unchecked Sendable {
    public static let shared = Log()

    private let monitor = Monitor()
    private var levels = [LogLevel](repeating: .warning, count: LogDomain.allCases.count)
    private var sink: LogSink?
    private var inFlight = 0

    public func level(_ d: LogDomain) -> LogLevel { monitor.locked { levels[Int(d.rawValue)] } }
    public func setLevel(_ d: LogDomain, _ l: LogLevel) { monitor.locked { levels[Int(d.rawValue)] = l } }

    /// Replaces the sink; returns once no call to the previous one is running.
    public func setSink(_ s: LogSink?) {
        monitor.locked {
            sink = s
            while inFlight > 0 { _ = monitor.wait(until: nil) }
        }
    }

    public func emit(_ d: LogDomain, _ l: LogLevel, _ message: @autoclosure () -> String) {
        guard l != .none, l >= level(d) else { return }
        let text = message()
        let s: LogSink? = monitor.locked {
            if sink != nil { inFlight += 1 }
            return sink
        }
        if let s {
            s(d, l, text)
            monitor.locked { inFlight -= 1; monitor.broadcast() }
        } else {
            var line = Array("cblite [\(d.name)] \(l): \(text)\n".utf8)
            _ = line.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
        }
    }

    public static func logger(_ d: LogDomain) -> Logger {
        Logger(label: d.label) { _ in CBLLogHandler(domain: d) }
    }
}

/// swift-log handler that routes to `Log.shared`.
struct CBLLogHandler: LogHandler {
    let domain: LogDomain
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level {
        get { Log.shared.level(domain).swiftLogLevel }
        set { Log.shared.setLevel(domain, LogLevel(newValue)) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
             file: String, function: String, line: UInt) {
        Log.shared.emit(domain, LogLevel(level), message.description)
    }
}

/// One logger per domain (include/cblite.h, cbl_log_domain); the listener and the
/// replicator use theirs through `Log.logger`.
public enum Loggers {
    public static let database = Log.logger(.database)
    public static let storage = Log.logger(.storage)
    public static let changes = Log.logger(.changes)
    public static let query = Log.logger(.query)
    public static let replication = Log.logger(.replication)
    public static let listener = Log.logger(.listener)
}
