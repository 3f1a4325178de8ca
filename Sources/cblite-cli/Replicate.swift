import ArgumentParser
import CBLiteCore
import CBLiteDiscovery
import CBLiteReplicator
import Glibc

// `cblite push`, `cblite pull` and `cblite sync`: replicate a local database (collection)
// with a peer's database — another `cblite serve`, CouchDB, PouchDB's server — through
// CBLiteReplicator. The configuration is the JSON object of cbl_replicator_start (one shape
// for C, Python and this tool), built from the options and checked by
// ReplicatorConfiguration(json:).

private let replicationDiscussion = """
    URL is the peer's database: http[s]://[user[:password]@]host[:port]/db, or \
    peer:NAME[/db] for a peer advertised on the local network under NAME (`cblite serve \
    --advertise NAME`, see `cblite peers`), found with DNS-SD within 10 seconds; without \
    /db, the peer's database of the local one's name. A peer advertising TLS is pinned to \
    the certificate fingerprint it advertises unless --pinned-cert or --ca-file says \
    otherwise (trust what answers to the name on the network). A URL ending in \
    #sha256=HEX (what `cblite serve --qr` shows) pins that certificate. With --user, \
    the password is read from the environment variable CBLITE_PASSWORD, else from the URL, \
    else (on a terminal) asked for without echo; it is never printed.

    One-shot replications end when caught up; --continuous ones run until SIGINT or \
    SIGTERM, then stop cleanly. Progress goes to standard error (a bar refreshed in place \
    on a terminal, otherwise a line per change at most once a second); the summary goes to \
    standard output. With --json, standard output has one JSON object per line: \
    {"type":"status",...} as the status changes, {"type":"document",...} for each document \
    that failed, and a final {"type":"summary",...}.

    A document that fails is tried again by the next run (its revisions wait in the \
    replication's checkpoint, counted as "to retry") until it goes through; \
    --clear-failed forgets them first.

    --filter NAME selects the documents by a named filter: pulling, the peer's \
    (CouchDB's "ddoc/name"); pushing, one registered on the local database by the program \
    that has it open (cbl_db_set_filter). Each --param KEY=VALUE is one of its parameters.

    Exit codes: 0 the replication finished (or, --continuous, was stopped by a signal) \
    with no error and no document failing; 1 it stopped with an error (401 wrong \
    credentials, 403, 404 no such database, the peer unreachable after the retries, or \
    interrupted before it was done) or a document failed; 64 usage error (bad option, \
    URL, header or certificate fingerprint); otherwise the local database's errors as for \
    every command (2 not found, 5 busy, ...).
    """

struct ReplicationOptions: ParsableArguments {
    @Argument(help: "The peer's database URL (http[s]://[user[:password]@]host[:port]/db), or peer:NAME[/db] for a peer found on the local network.")
    var url: String

    @Flag(name: .long, help: "Keep replicating new changes until SIGINT or SIGTERM.")
    var continuous = false

    @Flag(name: .customLong("create-target"), help: "Create the target database when missing (the peer's when pushing, the local one when pulling).")
    var createTarget = false

    @Option(name: .customLong("doc-id"), help: "Only this document (repeatable).")
    var docIDs: [String] = []

    @Option(name: .long, help: "Only documents this named filter passes (the peer's when pulling, e.g. ddoc/name; a registered local one when pushing).")
    var filter: String?

    @Option(name: .customLong("param"), help: "A parameter of --filter, as KEY=VALUE (repeatable).")
    var params: [String] = []

    @Flag(name: .customLong("clear-failed"), help: "Forget the documents earlier runs failed to replicate instead of retrying them.")
    var clearFailed = false

    @Option(name: .long, help: "User name; the password comes from $CBLITE_PASSWORD (or the URL, or a prompt).")
    var user: String?

    @Flag(name: .long, help: "Authenticate once with POST /_session and use its cookie (needs a user).")
    var session = false

    @Option(name: .customLong("header"), help: "An HTTP header sent with every request, as 'Name: value' (repeatable).")
    var headers: [String] = []

    @Option(name: .customLong("pinned-cert"), help: "Trust exactly the certificate with this SHA-256 (64 hex digits; https only).")
    var pinnedCert: String?

    @Option(name: .customLong("ca-file"), help: "Trust the CA certificates of this PEM file (https only).")
    var caFile: String?

    @Option(name: .customLong("batch-size"), help: "Changes per batch (1 to 10000; default 500).")
    var batchSize: Int?

    @Option(name: .customLong("max-retries"), help: "Retries of a transient failure before a one-shot run gives up (default 9; back-off doubles from 0.5 s).")
    var maxRetries: Int?

    @Option(name: .customLong("timeout"), help: "Seconds the peer may take to answer a request (default 60).")
    var timeout: Int?
}

struct Push: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a database's changes to a peer's database.", discussion: replicationDiscussion)
    @OptionGroup var db: DatabaseOptions
    @OptionGroup var options: ReplicationOptions
    func run() throws { try ReplicationRun(db: db, options: options, direction: .push).run() }
}

struct Pull: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch a peer database's changes into a database.", discussion: replicationDiscussion)
    @OptionGroup var db: DatabaseOptions
    @OptionGroup var options: ReplicationOptions
    func run() throws { try ReplicationRun(db: db, options: options, direction: .pull).run() }
}

struct Sync: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replicate a database with a peer's database both ways.", discussion: replicationDiscussion)
    @OptionGroup var db: DatabaseOptions
    @OptionGroup var options: ReplicationOptions
    func run() throws { try ReplicationRun(db: db, options: options, direction: .both).run() }
}

/// A usage error found after parsing (the configuration's own checks): the message as
/// cblite's other errors, and exit code 64 as ArgumentParser's.
private func usageError(_ message: String) -> ExitCode {
    Output.writeAll(2, "cblite: \(message)\n")
    return ExitCode.validationFailure
}

private struct ReplicationRun {
    let db: DatabaseOptions
    let options: ReplicationOptions
    let direction: ReplicatorConfiguration.Direction

    func run() throws {
        let configuration = try makeConfiguration()
        let remote = configuration.remote.redacted

        // Block the signals before any thread starts (the replicator's event loop starts in
        // its initializer) so that only this thread takes them, with sigtimedwait.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        var previousMask = sigset_t()
        pthread_sigmask(SIG_BLOCK, &signals, &previousMask)
        defer { pthread_sigmask(SIG_SETMASK, &previousMask, nil) }

        let out = Output(json: db.json)
        let createLocal = options.createTarget && direction != .push
        // A database this run creates is removed again if the replication fails before
        // writing anything into it (a wrong password must not leave an empty one behind).
        let (name, dir) = try db.location()
        let createdHere = try createLocal && !Database.exists(name: name, directory: dir)
        var removeCreated = false
        defer { if removeCreated { try? Database.delete(name: name, directory: dir) } }
        try db.withCollection(create: createLocal) { _, collection in
            let failures = FailureLog()
            let replicator: Replicator
            do {
                replicator = try Replicator(
                    collection: collection, configuration: configuration,
                    onStatus: { status in out.statusChanged(status) },
                    onDocuments: { docs in
                        let failed = docs.filter { $0.error != nil }
                        guard !failed.isEmpty else { return }
                        failures.add(failed)
                        out.documentsFailed(failed)
                    })
            } catch let e as CBLError where e.status == .badRequest {
                throw usageError(e.message)                         // e.g. an unreadable CA file
            }
            out.begin(direction: direction, remote: remote, continuous: options.continuous)
            Log.shared.setSink { domain, level, text in out.log("cblite [\(domain)] \(level): \(text)") }
            defer { Log.shared.setSink(nil) }

            if options.clearFailed { try replicator.clearFailedDocuments() }
            try replicator.start()
            var interrupted = false
            while !replicator.waitUntilStopped(timeoutMs: 200) {
                var zero = timespec(tv_sec: 0, tv_nsec: 0)
                let sig = sigtimedwait(&signals, nil, &zero)
                if sig == SIGINT || sig == SIGTERM {
                    interrupted = true
                    out.note("stopping (again to quit at once)")
                    // A second signal ends the process the default way if stopping hangs.
                    pthread_sigmask(SIG_UNBLOCK, &signals, nil)
                    break
                }
                out.tick(replicator.status)
            }
            replicator.stop()                                       // joins the threads: no callback runs after this
            let status = replicator.status
            let failed = status.errorMessage != nil || status.documentFailures > 0 || (interrupted && !options.continuous)
            out.summary(status: status, failures: failures, interrupted: interrupted, exitCode: failed ? 1 : 0)
            removeCreated = createdHere && status.errorMessage != nil && status.documentsPulled == 0
            if failed { throw ExitCode(1) }
        }
    }

    /// The replicator's JSON configuration from the options, checked by the replicator.
    func makeConfiguration() throws -> ReplicatorConfiguration {
        var o = JSONObject()
        let (url, pinned) = try peerURL()
        o["url"] = .string(url)
        o["direction"] = .string(direction.rawValue)
        if options.continuous { o["continuous"] = .bool(true) }
        if options.createTarget && direction != .pull { o["create_target"] = .bool(true) }
        if !options.docIDs.isEmpty { o["doc_ids"] = .array(options.docIDs.map { .string($0) }) }
        if let f = options.filter {
            var params = JSONObject()
            for p in options.params {
                guard let eq = p.firstIndex(of: "="), eq != p.startIndex else { throw usageError("--param takes KEY=VALUE, not \(p)") }
                params[String(p[..<eq])] = .string(String(p[p.index(after: eq)...]))
            }
            // The peer's filter for what comes in, a local one for what goes out.
            if direction != .push { o["pull_filter"] = .string(f); o["pull_filter_params"] = .object(params) }
            if direction != .pull { o["filter"] = .string(f); o["filter_params"] = .object(params) }
        } else if !options.params.isEmpty {
            throw usageError("--param needs --filter")
        }
        if let n = options.batchSize { o["batch_size"] = .int(Int64(n)) }
        if let n = options.maxRetries { o["max_retries"] = .int(Int64(n)) }
        if let n = options.timeout { o["timeout_ms"] = .int(Int64(n) * 1000) }
        if !options.headers.isEmpty {
            var h = JSONObject()
            for line in options.headers {
                guard let colon = line.firstIndex(of: ":") else { throw usageError("--header takes 'Name: value', not \(line)") }
                h[String(line[..<colon])] = .string(String(line[line.index(after: colon)...].drop(while: { $0 == " " || $0 == "\t" })))
            }
            o["headers"] = .object(h)
        }
        var tls = JSONObject()
        if let p = pinned { tls["pinned_sha256"] = .string(p) }
        if let f = options.caFile { tls["ca_file"] = .string(f) }
        if !tls.isEmpty { o["tls"] = .object(tls) }

        // Credentials: --user (or the URL's user) with $CBLITE_PASSWORD, the URL's password
        // or a prompt, as "auth" (which takes precedence over the URL's credentials).
        let parsed: RemoteURL
        do { parsed = try RemoteURL(url) } catch let e as CBLError { throw usageError(e.message) }
        let envPassword = getenv("CBLITE_PASSWORD").map { String(cString: $0) }
        if let user = options.user ?? parsed.user {
            // An explicit password wins: the URL's for the URL's user, $CBLITE_PASSWORD for --user.
            let given = options.user == nil || options.user == parsed.user
                ? parsed.password ?? envPassword : envPassword ?? parsed.password
            guard let password = given ?? Secrets.prompt("Password for \(user): ") else {
                throw usageError("no password for \(user): set CBLITE_PASSWORD (or put it in the URL)")
            }
            o["auth"] = .object(JSONObject([("type", .string(options.session ? "session" : "basic")),
                                            ("username", .string(user)), ("password", .string(password))]))
        } else if options.session {
            throw usageError("--session needs a user (--user NAME or user@ in the URL)")
        }

        let text = String(decoding: JSONWriter.ordered(.object(o)), as: UTF8.self)
        do { return try ReplicatorConfiguration(json: text) } catch let e as CBLError { throw usageError(e.message) }
    }

    /// The URL to replicate with and the certificate to pin: a `peer:NAME[/db]` found on
    /// the network (pinned to its advertised fingerprint unless told otherwise), or the
    /// URL given, its `#sha256=HEX` taken as the certificate to pin.
    private func peerURL() throws -> (url: String, pinned: String?) {
        guard let (name, database) = PeerAddress.parse(options.url) else {
            let (url, fragmentPin) = ShareableURL.split(options.url)
            if let fragmentPin, let given = options.pinnedCert, given.lowercased() != fragmentPin.lowercased() {
                throw usageError("--pinned-cert and the URL's #sha256= name different certificates")
            }
            return (url, options.pinnedCert ?? fragmentPin)
        }
        let peer = try PeerAddress.find(name: name, type: ServiceType.couchDB, timeoutMs: 10_000)
        guard let base = peer.url else { throw CBLError(.notFound, "the peer \"\(name)\" has no address") }
        let db = try database ?? self.db.location().name
        let pinned = options.pinnedCert ?? (options.caFile == nil ? peer.txt.sha256 : nil)
        return (base + db.split(separator: "/", omittingEmptySubsequences: false).joined(separator: "%2F"), pinned)
    }

}

/// The first failed documents (for the summary) and how many failed.
private final class FailureLog: @unchecked Sendable {
    static let kept = 20
    private let state = LockedValue((first: [DocumentReplication](), count: 0))

    func add(_ docs: [DocumentReplication]) {
        state.withLock { s in
            s.count += docs.count
            s.first += docs.prefix(max(0, FailureLog.kept - s.first.count))
        }
    }

    var snapshot: (first: [DocumentReplication], count: Int) { state.withLock { $0 } }
}

/// Everything the command prints, from the main thread and the replication threads, under
/// one lock: the progress bar (standard error, on a terminal), plain progress lines
/// (standard error otherwise), JSON lines and the summary (standard output).
private final class Output: @unchecked Sendable {
    let json: Bool
    let showsBar: Bool
    private var lock = pthread_mutex_t()
    private var barDrawn = false
    private var direction = ReplicatorConfiguration.Direction.both
    private var remote = ""
    private var continuous = false
    private var start = MonotonicTime.now()
    private var lastPrinted: ReplicatorStatus?
    private var lastPrintTime: MonotonicTime?
    private var lastStatus = ReplicatorStatus()
    /// (time, documents, completed changes) over the last few seconds, for the rate.
    private var samples: [(t: MonotonicTime, docs: Int64, completed: Int64)] = []

    init(json: Bool) {
        self.json = json
        showsBar = !json && isatty(2) != 0
        pthread_mutex_init(&lock, nil)
    }

    deinit { pthread_mutex_destroy(&lock) }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        return body()
    }

    static func writeAll(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + off, $0.count - off) }
            if n < 0 { if errno == EINTR { continue }; return }
            off += n
        }
    }

    private var elapsedSeconds: Double { Double(MonotonicTime.now().nanoseconds - start.nanoseconds) / 1e9 }

    func begin(direction: ReplicatorConfiguration.Direction, remote: String, continuous: Bool) {
        locked {
            self.direction = direction
            self.remote = remote
            self.continuous = continuous
            start = MonotonicTime.now()
            samples = [(start, 0, 0)]
            if !json {
                let verb = direction == .push ? "pushing to" : direction == .pull ? "pulling from" : "syncing with"
                eraseBar()
                Output.writeAll(2, "cblite: \(verb) \(remote)\(continuous ? " (continuous; Ctrl-C to stop)" : "")\n")
            }
        }
    }

    // MARK: events

    /// From the replication threads: a JSON line per status change.
    func statusChanged(_ s: ReplicatorStatus) {
        guard json else { return }
        locked {
            var o = JSONObject([("type", .string("status"))])
            o.members += s.json.members
            o["elapsed_ms"] = .int(Int64(elapsedSeconds * 1000))
            Output.writeAll(1, String(decoding: JSONWriter.ordered(.object(o)), as: UTF8.self) + "\n")
        }
    }

    func documentsFailed(_ docs: [DocumentReplication]) {
        guard json else { return }
        locked {
            var text = ""
            for d in docs {
                var o = JSONObject([("type", .string("document"))])
                o.members += d.json.members
                text += String(decoding: JSONWriter.ordered(.object(o)), as: UTF8.self) + "\n"
            }
            Output.writeAll(1, text)
        }
    }

    /// A log line of the engine (retries, errors) above the bar.
    func log(_ line: String) {
        locked {
            eraseBar()
            Output.writeAll(2, line + "\n")
            if showsBar { drawBar() }
        }
    }

    func note(_ text: String) {
        guard !json else { return }
        locked {
            eraseBar()
            Output.writeAll(2, "cblite: \(text)\n")
        }
    }

    /// From the main thread, about five times a second.
    func tick(_ s: ReplicatorStatus) {
        guard !json else { return }
        locked {
            lastStatus = s
            let now = MonotonicTime.now()
            samples.append((now, s.documentsPushed + s.documentsPulled, s.completed))
            while let first = samples.first, now.nanoseconds - first.t.nanoseconds > 5_000_000_000 { samples.removeFirst() }
            if showsBar {
                drawBar()
            } else if s != lastPrinted, lastPrintTime.map({ now.nanoseconds - $0.nanoseconds >= 1_000_000_000 }) ?? true {
                lastPrinted = s
                lastPrintTime = now
                Output.writeAll(2, "cblite: " + describe(s) + "\n")
            }
        }
    }

    // MARK: progress

    /// Documents and changes per second over the last few seconds (nil in the first half second).
    private var rates: (docs: Double, changes: Double)? {
        guard let a = samples.first, let b = samples.last, b.t.nanoseconds > a.t.nanoseconds + 500_000_000 else { return nil }
        let dt = Double(b.t.nanoseconds - a.t.nanoseconds) / 1e9
        return (Double(b.docs - a.docs) / dt, Double(b.completed - a.completed) / dt)
    }

    private func describe(_ s: ReplicatorStatus) -> String {
        var parts: [String] = [s.activity.rawValue]
        if direction != .pull { parts.append("\(s.documentsPushed) pushed") }
        if direction != .push { parts.append("\(s.documentsPulled) pulled") }
        if s.documentFailures > 0 { parts.append("\(s.documentFailures) failed") }
        if s.documentsToRetry > 0 { parts.append("\(s.documentsToRetry) to retry") }
        parts.append("\(s.completed)/\(s.total) changes")
        if let r = rates?.docs, r > 0 { parts.append(formatRate(r)) }
        if let m = s.errorMessage { parts.append("error: \(s.errorStatus == 0 ? m : "\(s.errorStatus) \(m)")") }
        return parts.joined(separator: ", ")
    }

    private func drawBar() {
        let s = lastStatus
        let width = terminalWidth()
        var left = ""
        if direction != .pull { left += "↑ \(s.documentsPushed) pushed  " }
        if direction != .push { left += "↓ \(s.documentsPulled) pulled  " }
        if s.documentFailures > 0 { left += "✗ \(s.documentFailures) failed  " }
        var right = "\(s.completed)/\(s.total)"
        if let (docRate, _) = rates { right += "  " + formatRate(docRate) }
        // The status's total is known ahead: a push counts its pending changes, a pull
        // reads the peer's "pending" (CouchDB 2+; our own listener does not say).
        if s.total > s.completed, let changeRate = rates?.changes, changeRate > 0, s.activity == .busy {
            right += "  ETA " + formatDuration(Double(s.total - s.completed) / changeRate)
        }
        right += "  " + s.activity.rawValue
        if s.errorMessage != nil { right += " (\(s.errorStatus == 0 ? "network" : String(s.errorStatus)))" }
        let fixed = left.count + right.count + 4           // "[", "] " and the last column
        var line = left
        if s.total > 0 && width - fixed >= 10 {
            let barWidth = min(40, width - fixed)
            let filled = Int(Double(barWidth) * min(1, Double(s.completed) / Double(s.total)))
            line += "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "] "
        }
        line += right
        if line.count > width - 1 { line = String(line.prefix(max(0, width - 1))) }
        Output.writeAll(2, "\r\u{1B}[K" + line)
        barDrawn = true
    }

    private func eraseBar() {
        if barDrawn { Output.writeAll(2, "\r\u{1B}[K"); barDrawn = false }
    }

    private func terminalWidth() -> Int {
        var ws = winsize()
        if ioctl(2, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0 { return Int(ws.ws_col) }
        return 80
    }

    // MARK: summary

    func summary(status s: ReplicatorStatus, failures: FailureLog, interrupted: Bool, exitCode: Int32) {
        let (first, count) = failures.snapshot
        let elapsed = elapsedSeconds
        locked {
            eraseBar()
            if json {
                var o = JSONObject([("type", .string("summary")), ("direction", .string(direction.rawValue)),
                                    ("url", .string(remote)), ("continuous", .bool(continuous))])
                o.members += s.json.members
                o["failures"] = .array(first.map { .object($0.json) })
                o["interrupted"] = .bool(interrupted)
                o["elapsed_ms"] = .int(Int64(elapsed * 1000))
                o["exit_code"] = .int(Int64(exitCode))
                Output.writeAll(1, String(decoding: JSONWriter.ordered(.object(o)), as: UTF8.self) + "\n")
                return
            }
            if !showsBar && lastPrinted != s { Output.writeAll(2, "cblite: " + describe(s) + "\n") }
            let how = s.errorMessage != nil ? "failed" : interrupted ? (continuous ? "stopped" : "interrupted") : "finished"
            let docs = s.documentsPushed + s.documentsPulled
            let rate = docs > 0 && elapsed > 0 ? " (\(formatRate(Double(docs) / elapsed)))" : ""
            var text = "\(direction == .both ? "sync" : direction.rawValue) \(remote): \(how) in \(formatDuration(elapsed))\(rate)\n"
            if direction != .pull { text += "  documents pushed: \(s.documentsPushed)\n" }
            if direction != .push { text += "  documents pulled: \(s.documentsPulled)\n" }
            text += "  failures: \(max(Int64(count), s.documentFailures))\n"
            for d in first {
                let why = d.error.map { $0.httpStatus == 0 ? $0.message : "\($0.httpStatus) \($0.message)" } ?? ""
                text += "    \(d.direction.rawValue) \(d.docID) \(d.revID ?? "-"): \(why)\n"
            }
            let more = max(Int64(count), s.documentFailures) - Int64(first.count)
            if more > 0 { text += "    ... and \(more) more\n" }
            if s.documentsToRetry > 0 { text += "  waiting to retry: \(s.documentsToRetry) (the next run tries them again; --clear-failed forgets them)\n" }
            if let m = s.errorMessage {
                text += "  error: \(s.errorStatus == 0 ? m : "\(s.errorStatus) \(m)")\n"
            }
            Output.writeAll(1, text)
            if let m = s.errorMessage {
                Output.writeAll(2, "cblite: replication failed: \(s.errorStatus == 0 ? m : "\(s.errorStatus) \(m)")\n")
            }
        }
    }
}

private func formatRate(_ r: Double) -> String {
    r >= 100 ? "\(Int(r.rounded())) docs/s" : "\(Double(Int(r * 10)) / 10) docs/s"
}

private func formatDuration(_ seconds: Double) -> String {
    if seconds < 10 { return "\(Double(Int(seconds * 100)) / 100)s" }
    if seconds < 60 { return "\(Int(seconds))s" }
    let s = Int(seconds.rounded())
    let (h, m, sec) = (s / 3600, (s % 3600) / 60, s % 60)
    func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    return h > 0 ? "\(h)h\(two(m))m\(two(sec))s" : "\(m)m\(two(sec))s"
}
