import ArgumentParser
import CBLiteCore
import CouchWire
import Glibc

// `cblite`: inspect and edit cblite databases from a shell.
// Exit codes: 0 success, 1 other error, 2 not found (404), 3 conflict (409),
// 4 bad request (400), 5 busy (503), 6 unauthorized (401), 7 forbidden (403), 8 not a
// database or damaged (500 with SQLite's NOTADB/CORRUPT detail; `check` and `export
// --salvage` found problems), 64 usage (EX_USAGE, as ArgumentParser's own).
// push/pull/sync: 1 when the replication failed (Replicate.swift).

func printJSON(_ bytes: [UInt8]) { print(String(decoding: bytes, as: UTF8.self)) }

/// Pretty-prints compact JSON with two-space indentation for people.
func pretty(_ value: JSONValue, indent: String = "") -> String {
    switch value {
    case .array(let a) where !a.isEmpty:
        let inner = indent + "  "
        return "[\n" + a.map { inner + pretty($0, indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
    case .object(let o) where !o.isEmpty:
        let inner = indent + "  "
        return "{\n" + o.members.map { inner + JSONValue.string($0.key).jsonString + ": " + pretty($0.value, indent: inner) }
            .joined(separator: ",\n") + "\n\(indent)}"
    default:
        return value.jsonString
    }
}

func printPretty(_ bytes: [UInt8]) throws {
    print(pretty(try JSONParser.parse(String(decoding: bytes, as: UTF8.self))))
}

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show a database's name, path, counts and collections.")
    @OptionGroup var db: DatabaseOptions

    func run() throws {
        let d = try db.open()
        defer { try? d.close() }
        var collections: [JSONValue] = []
        for scope in try d.scopeNames() {
            for name in try d.collectionNames(scope: scope) {
                guard let c = try d.collection(scope: scope, name: name) else { continue }
                collections.append(.object(JSONObject([("scope", .string(scope)), ("name", .string(name)),
                                                       ("documents", .int(try c.count)), ("last_sequence", .int(try c.lastSequence))])))
            }
        }
        let info = JSONValue.object(JSONObject([
            ("name", .string(d.name)), ("path", .string(d.path)),
            ("max_rev_tree_depth", .int(Int64(try d.maxRevTreeDepth))),
            ("collections", .array(collections)),
            ("storage", try JSONParser.parse(StorageInfo.versionsJSON())),
        ]))
        if db.json { print(info.jsonString) } else { print(pretty(info)) }
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List documents by ID.")
    @OptionGroup var db: DatabaseOptions
    @Option(help: "First document ID to list.") var start: String?
    @Option(help: "Last document ID to list.") var end: String?
    @Option(help: "List at most this many.") var limit: Int64 = -1
    @Option(help: "Skip this many first.") var skip: Int64 = 0
    @Flag(help: "Descending ID order.") var descending = false
    @Flag(help: "Include deleted documents.") var deleted = false
    @Flag(name: .shortAndLong, help: "Show revision, sequence and flags.") var long = false

    func run() throws {
        try db.withCollection { _, c in
            // The all-documents query (the C ABI's and the listener's), one row at a time.
            var o = QueryOptions()
            o.startKey = start.map { .string($0) }
            o.endKey = end.map { .string($0) }
            o.descending = descending
            o.limit = limit
            o.skip = skip
            o.allDocsMode = deleted ? .includeDeleted : .showConflicts
            // With deleted documents the rows carry no conflicts: those come from a second
            // query of only the conflicted ones.
            var conflictedIDs: Set<String>? = nil
            if deleted && (long || db.json) {
                var conflicts = o
                conflicts.allDocsMode = .onlyConflicts
                conflicts.limit = -1
                conflicts.skip = 0
                conflictedIDs = Set(try c.allDocsQuery(conflicts).allRows().compactMap(\.docID))
            }
            let rows = try c.allDocsQuery(o)
            var listed: [JSONValue] = []
            while let r = try rows.next() {
                guard let id = r.docID else { continue }
                let value = try r.value.map { v in try v.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) } } ?? JSONObject()
                let rev = value["rev"]?.stringValue ?? ""
                let isDeleted = value["deleted"]?.boolValue == true
                let conflicted = conflictedIDs?.contains(id) ?? (value["_conflicts"] != nil)
                if db.json {
                    listed.append(.object(JSONObject([("id", .string(id)), ("rev", .string(rev)), ("sequence", .int(r.sequence)),
                                                      ("deleted", .bool(isDeleted)), ("conflicted", .bool(conflicted))])))
                } else if long {
                    let flags = [isDeleted ? "deleted" : nil, conflicted ? "conflicted" : nil].compactMap { $0 }.joined(separator: ",")
                    print("\(id)\t\(rev)\tseq \(r.sequence)\(flags.isEmpty ? "" : "\t" + flags)")
                } else {
                    print(id)
                }
            }
            if db.json { print(JSONValue.array(listed).jsonString) }
        }
    }
}

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a document (or one of its revisions).")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Document ID (_local/ID: a local document).") var docID: String
    @Option(help: "A specific revision.") var rev: String?
    @Flag(help: "Show the revision tree and conflicts instead of the body.") var revs = false
    @Flag(help: "Show a deleted document.") var deleted = false

    func run() throws {
        let address = DocumentAddress(docID)
        try address.refuseForLocal("--rev", given: rev != nil)
        try address.refuseForLocal("--revs", given: revs)
        try address.refuseForLocal("--deleted", given: deleted)
        try db.withCollection { _, c in
            let bytes: [UInt8]
            if revs {
                bytes = Array(try c.revisionTree(docID: docID).utf8)
            } else if let rev {
                bytes = try c.get(docID: docID, revID: rev, options: [.deleted])
            } else {
                bytes = try address.read(c, options: deleted ? [.deleted, .conflicts] : [.conflicts])
            }
            if db.json { printJSON(bytes) } else { try printPretty(bytes) }
        }
    }
}

struct Put: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Save a document: a new one, or a new revision with --rev (or --update).")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Document ID (_local/ID: a local document).") var docID: String
    @Argument(help: "JSON body; '-' or absent reads standard input.") var body: String?
    @Option(help: "Parent revision (the current one) for an update.") var rev: String?
    @Flag(help: "Replace the current revision, whatever it is.") var update = false
    @Flag(help: "Create the database if it does not exist.") var create = false

    func run() throws {
        var text = body ?? "-"
        if text == "-" {
            var data: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buf.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                data += buf[0..<n]
            }
            text = String(decoding: data, as: UTF8.self)
        }
        let newBody = text
        let address = DocumentAddress(docID)
        try db.withCollection(create: create) { _, c in
            let revID = update ? try address.replace(c, json: newBody) : try address.save(c, json: newBody, parent: rev)
            if db.json { print(JSONValue.object(JSONObject([("id", .string(docID)), ("rev", .string(revID))])).jsonString) }
            else { print(revID) }
        }
    }
}

struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Delete a document (writes a tombstone).")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Document ID (_local/ID: a local document, removed outright).") var docID: String
    @Option(help: "Revision to delete (default: the current one).") var rev: String?

    func run() throws {
        try db.withCollection { _, c in
            let revID = try DocumentAddress(docID).delete(c, parent: rev)
            if db.json { print(JSONValue.object(JSONObject([("id", .string(docID)), ("rev", .string(revID))])).jsonString) }
            else { print(revID) }
        }
    }
}

struct Purge: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove every trace of a document.")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Document ID.") var docID: String

    func run() throws {
        try db.withCollection { _, c in try c.purge(docID: docID) }
        if !db.json { print("purged \(docID)") } else { print("{\"purged\":\(JSONValue.string(docID).jsonString)}") }
    }
}

struct Changes: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the changes feed.")
    @OptionGroup var db: DatabaseOptions
    @Option(help: "Only changes after this sequence.") var since: Int64 = 0
    @Option(help: "At most this many.") var limit: Int64 = -1
    @Flag(help: "Include document bodies.") var docs = false
    @Flag(help: "List every leaf revision (conflicts).") var allRevs = false
    @Option(help: "Only changes this filter passes: a design document's (DDOC/NAME), _design, _view (with --param view=DDOC/VIEW).")
    var filter: String?
    @Option(name: .customLong("param"), help: "A parameter of --filter, as KEY=VALUE (repeatable).") var params: [String] = []

    func run() throws {
        var o = ChangesOptions()
        o.filter = filter
        for p in params {
            guard let eq = p.firstIndex(of: "="), eq != p.startIndex else { throw ValidationError("--param takes KEY=VALUE, not \(p)") }
            o.filterParams[String(p[..<eq])] = .string(String(p[p.index(after: eq)...]))
        }
        o.limit = limit
        o.includeDocs = docs
        o.allRevs = allRevs
        let opts = o
        try db.withCollection { _, c in
            if db.json {
                var feed = ChangesWriter.Document()
                let last = try c.visitChanges(since: since, options: opts) { feed.add($0) }
                printJSON(feed.finish(lastSeq: last))
                return
            }
            for e in try c.changes(since: since, options: opts) {
                print("\(e.sequence)\t\(e.docID)\t\(e.revs.joined(separator: ","))\(e.deleted ? "\tdeleted" : "")")
                if let d = e.doc { print("\t" + String(decoding: d, as: UTF8.self)) }
            }
        }
    }
}

struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Compact the database (drop old revision bodies, shrink the file).")
    @OptionGroup var db: DatabaseOptions

    func run() throws {
        let d = try db.open()
        defer { try? d.close() }
        try Progress.activity("compact", json: db.json) { try d.compact() }
        let problems = try Progress.activity("integrity check", json: db.json) { try d.integrityCheck() }
        if db.json { print(JSONValue.object(JSONObject([("compacted", .bool(true)), ("problems", .array(problems.map { .string($0) }))])).jsonString) }
        else { print(problems.isEmpty ? "compacted; integrity check passed" : "compacted; problems:\n" + problems.joined(separator: "\n")) }
        if !problems.isEmpty { throw ExitCode(8) }
    }
}

struct CBLiteTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cblite",
        abstract: "Inspect and edit cblite databases.",
        discussion: """
            DATABASE is a name (in --dir, else $CBLITE_DIR, else ~/.local/share/cblite) or the path \
            of a bundle (path/to/NAME.cblite2). Encrypted databases: --password (from \
            $CBLITE_DB_PASSWORD or a prompt) or --raw-key (64 hex digits from $CBLITE_DB_KEY or a \
            prompt); keys are never taken from the command line nor echoed. --read-only changes \
            nothing on disk and opens read-only files and directories. Every command takes \
            --json. Long work shows a progress bar on a terminal, plain lines otherwise.

            Exit codes: 0 success, 1 other error, 2 not found, 3 conflict, 4 bad request, \
            5 busy, 6 unauthorized (encrypted: wrong or missing key), 7 forbidden (e.g. a write \
            to a database opened --read-only), 8 not a database or damaged (also: problems \
            found by check, documents lost by export --salvage), 64 usage error. push, pull \
            and sync: 1 when the replication failed (see their --help).
            """,
        version: "cblite \(CBLiteVersion.string) (SQLite \(Connection.sqliteVersion))",
        subcommands: [Info.self, List.self, Get.self, Cat.self, Revs.self, Put.self, Edit.self, Remove.self, Purge.self,
                      Changes.self, Query.self, ListCollections.self, MakeCollection.self, AttachmentCommands.self,
                      Export.self, Import.self, Copy.self, Check.self, Compact.self, Reindex.self,
                      Encrypt.self, Decrypt.self, Rekey.self, Shell.self, Serve.self, Push.self, Pull.self, Sync.self, Peers.self,
                      Find.self, IndexCommands.self, Search.self, TextIndexCommands.self])
}

func exitCode(for e: CBLError) -> Int32 {
    if e.status == .internalError && (e.detail & 0xFF == 26 || e.detail & 0xFF == 11) { return 8 }
    switch e.status {
    case .notFound: return 2
    case .conflict: return 3
    case .badRequest: return 4
    case .busy: return 5
    case .unauthorized: return 6
    case .forbidden: return 7
    default: return 1
    }
}

exit(runTool(Array(CommandLine.arguments.dropFirst())))
