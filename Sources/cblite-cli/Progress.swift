import Glibc

/// Progress of long work (export, import, copy, rekey, reindex) on standard error: a bar
/// redrawn in place on a terminal, plain lines (every tenth of the work) otherwise, and
/// nothing with --json (scripts read the summary on standard output).
final class Progress {
    let label: String
    let total: Int
    let unit: String
    private let bar: Bool
    private let quiet: Bool
    private var lastTenth = -1
    private var lastDraw = 0.0

    init(_ label: String, total: Int, unit: String = "documents", json: Bool) {
        self.label = label
        self.total = total
        self.unit = unit
        quiet = json
        bar = !json && isatty(2) != 0
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    func update(_ done: Int) {
        if quiet { return }
        if bar {
            let t = Progress.now()
            if done < total && t - lastDraw < 0.1 { return }
            lastDraw = t
            let width = 30
            let filled = total > 0 ? min(width, done * width / total) : width
            let percent = total > 0 ? done * 100 / total : 100
            writeStderr("\r\(label) [\(String(repeating: "#", count: filled))\(String(repeating: "-", count: width - filled))] \(percent)% \(done)/\(total) \(unit)")
        } else {
            let tenth = total > 0 ? done * 10 / total : 10
            if tenth != lastTenth && (tenth > lastTenth) {
                lastTenth = tenth
                writeStderr("\(label): \(done)/\(total) \(unit)\n")
            }
        }
    }

    /// Ends the bar's line (the summary follows on standard output).
    func finish(_ done: Int) {
        update(done)
        if bar && !quiet { writeStderr("\n") }
    }
}

extension Progress {
    /// Long work without a count (compact, reindex, a key change): a line when it starts
    /// and its duration when it ends, on standard error; nothing with --json.
    static func activity<T>(_ label: String, json: Bool, _ body: () throws -> T) throws -> T {
        if json { return try body() }
        let started = now()
        writeStderr(isatty(2) != 0 ? "\(label)…" : "\(label): started\n")
        let result = try body()
        let seconds = (now() - started) * 100
        writeStderr("\(isatty(2) != 0 ? "\r" : "")\(label): done in \(Double(Int(seconds.rounded())) / 100) s\n")
        return result
    }
}

func writeStderr(_ text: String) {
    var bytes = Array(text.utf8)
    var off = 0
    while off < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + off, $0.count - off) }
        if n < 0 { if errno == EINTR { continue }; return }
        off += n
    }
}
