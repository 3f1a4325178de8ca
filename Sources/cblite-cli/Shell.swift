import ArgumentParser
import CBLiteCore
import Glibc

/// `cblite shell DATABASE`: runs the tool's commands against one database, one per line,
/// with line editing and a history kept in $CBLITE_HISTORY (default ~/.cblite_history)
/// when the system's libedit is there (loaded at run time: no link dependency, and no GPL
/// readline in an Apache-licensed tool); plain lines otherwise (a pipe, or no libedit).
struct Shell: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "An interactive shell on one database (line editing and history on a terminal).",
        discussion: """
            Each line is a cblite command without the database: `ls -l`, `get doc1`, \
            `query --limit 5`, `put d '{"a":1}'`. Also: help, history, quit (or end of input). \
            Options given to shell (--dir, --collection, --read-only, --json, --password, --raw-key, \
            --busy-timeout) apply to every command; a key is asked once.
            """)
    @OptionGroup var db: DatabaseOptions

    func run() throws {
        // Ask for a key once; the commands read it from the environment of this process.
        if db.password, Secrets.env("CBLITE_DB_PASSWORD") == nil, let p = Secrets.prompt("Database password: ") {
            setenv("CBLITE_DB_PASSWORD", p, 1)
        }
        if db.rawKey, Secrets.env("CBLITE_DB_KEY") == nil, let k = Secrets.prompt("Database key (64 hex digits): ") {
            setenv("CBLITE_DB_KEY", k, 1)
        }
        let name = try db.location().name
        var common: [String] = []
        if let dir = db.dir { common += ["--dir", dir] }
        if let c = db.collection { common += ["--collection", c] }
        if db.json { common.append("--json") }
        if db.password { common.append("--password") }
        if db.rawKey { common.append("--raw-key") }
        if db.readOnly { common.append("--read-only") }
        if let t = db.busyTimeout { common += ["--busy-timeout", String(t)] }

        let input = LineInput(history: Secrets.env("CBLITE_HISTORY") ?? (Secrets.env("HOME").map { $0 + "/.cblite_history" }))
        defer { input.save() }
        while let line = input.read(prompt: "\(name)> ") {
            let words: [String]
            do { words = try ShellWords.split(line) } catch { writeStderr("cblite: \(error)\n"); continue }
            guard let command = words.first else { continue }
            input.remember(line)
            switch command {
            case "quit", "exit": return
            case "help":
                print("commands: " + CBLiteTool.configuration.subcommands.map { $0.configuration.commandName ?? "" }
                    .filter { !["shell", "serve", "push", "pull", "sync"].contains($0) }.joined(separator: " "))
                print("each takes its usual arguments without the database; `COMMAND --help` for one; quit to leave")
                continue
            case "history":
                for (i, h) in input.entries.enumerated() { print("\(i + 1)  \(h)") }
                continue
            case "shell", "serve", "push", "pull", "sync":
                writeStderr("cblite: \(command) is not available inside the shell\n")
                continue
            default: break
            }
            // The database is the first positional argument of every command.
            let status = runTool([command, db.database] + Array(words.dropFirst()) + common)
            if status != 0 && input.interactive { writeStderr("(exit \(status))\n") }
            fflush(nil)
        }
    }
}

/// Parses and runs one command line of the tool; returns its exit code (the same mapping
/// as the process's own).
func runTool(_ arguments: [String]) -> Int32 {
    if let command = arguments.first, let message = unknownCommandMessage(command) {
        writeStderr(message)
        return 64
    }
    do {
        var command = try CBLiteTool.parseAsRoot(arguments)
        try command.run()
        return 0
    } catch let e as CBLError {
        writeStderr("cblite: \(e.message)\n")
        return exitCode(for: e)
    } catch ToolError.usage(let message) {
        writeStderr("cblite: \(message)\n")
        return 64
    } catch {
        let code = CBLiteTool.exitCode(for: error).rawValue
        let message = CBLiteTool.fullMessage(for: error)
        if !message.isEmpty { (code == 0 ? { print(message) } : { writeStderr(message + "\n") })() }
        return code
    }
}

/// The usage error for a first argument that names no command, nil for a command or an
/// option. ArgumentParser would print the general help for `cblite nosuch --help` and
/// exit 0, as if the command existed.
func unknownCommandMessage(_ command: String) -> String? {
    guard !command.hasPrefix("-") else { return nil }
    let names = CBLiteTool.configuration.subcommands.flatMap { [$0._commandName] + $0.configuration.aliases }
    guard !names.contains(command) && command != "help" else { return nil }
    return "cblite: unknown command '\(command)'\nUsage: \(CBLiteTool.usageString())\n"
        + "  See 'cblite --help' for the commands.\n"
}

/// Splits a line as a shell would: words separated by blanks, '…' literal, "…" with
/// backslash escapes, a backslash escaping the next character.
enum ShellWords {
    struct Unterminated: Error, CustomStringConvertible { var description: String { "unterminated quote" } }

    static func split(_ line: String) throws -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var it = line.makeIterator()
        while let ch = it.next() {
            switch ch {
            case " ", "\t":
                if inWord { words.append(current); current = ""; inWord = false }
            case "'":
                inWord = true
                while true {
                    guard let c = it.next() else { throw Unterminated() }
                    if c == "'" { break }
                    current.append(c)
                }
            case "\"":
                inWord = true
                while true {
                    guard let c = it.next() else { throw Unterminated() }
                    if c == "\"" { break }
                    if c == "\\", let n = it.next() { current.append(n) } else { current.append(c) }
                }
            case "\\":
                inWord = true
                if let n = it.next() { current.append(n) }
            default:
                inWord = true
                current.append(ch)
            }
        }
        if inWord { words.append(current) }
        return words
    }
}

/// Lines from the terminal through libedit's readline interface when available, else
/// from standard input.
final class LineInput {
    private typealias ReadlineFn = @convention(c) (UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>?
    private typealias AddHistoryFn = @convention(c) (UnsafePointer<CChar>?) -> Int32
    private var readline: ReadlineFn?
    private var addHistory: AddHistoryFn?
    let interactive: Bool
    private let historyPath: String?
    private(set) var entries: [String] = []
    private var loaded = 0

    init(history: String?) {
        interactive = isatty(0) != 0 && isatty(1) != 0
        historyPath = history
        if interactive, let lib = dlopen("libedit.so.2", RTLD_NOW | RTLD_LOCAL) {
            readline = dlsym(lib, "readline").map { unsafeBitCast($0, to: ReadlineFn.self) }
            addHistory = dlsym(lib, "add_history").map { unsafeBitCast($0, to: AddHistoryFn.self) }
        }
        if let history, interactive, let f = fopen(history, "r") {
            defer { fclose(f) }
            var line: UnsafeMutablePointer<CChar>?
            var cap = 0
            while getline(&line, &cap, f) > 0, let l = line {
                let text = String(cString: l).trimmingNewline
                if !text.isEmpty { entries.append(text); _ = text.withCString { addHistory?($0) } }
            }
            free(line)
            loaded = entries.count
        }
    }

    func read(prompt: String) -> String? {
        if let readline {
            guard let p = prompt.withCString({ readline($0) }) else { print(""); return nil }
            defer { free(p) }
            return String(cString: p)
        }
        if interactive { print(prompt, terminator: ""); fflush(nil) }
        return readLine(strippingNewline: true)
    }

    func remember(_ line: String) {
        guard interactive, entries.last != line else { return }
        entries.append(line)
        _ = line.withCString { addHistory?($0) }
    }

    /// Appends this session's lines to the history file (the last 1000 kept).
    func save() {
        guard interactive, let historyPath, entries.count > loaded else { return }
        let kept = entries.suffix(1000)
        guard let f = fopen(historyPath, "w") else { return }
        for e in kept { fputs(e + "\n", f) }
        fclose(f)
    }
}

extension String {
    var trimmingNewline: String {
        var s = self
        while s.hasSuffix("\n") || s.hasSuffix("\r") { s.removeLast() }
        return s
    }
}
