import ArgumentParser
import CBLiteCore
import Glibc

// export, import and cp share one format: a document's leaf revisions, each as CouchDB's
// open_revs JSON with `_revisions` (its history) and attachments inline, written back
// with their own revision IDs (as replication does) — so a round trip is exact.

/// Every leaf revision of `docID` as JSON, with history and inline attachments.
func leafRevisions(_ c: Collection, docID: String) throws -> [[UInt8]] {
    var o = RevisionOptions()
    o.revisions = true
    o.attachments = .inline
    return try c.openRevs(docID: docID, revs: nil, options: o).compactMap { r in
        if case .ok(let rev) = r { return rev.json }
        return nil
    }
}

/// Every document's ID, deleted ones included, in ID order: the all-documents query (the
/// one the C ABI and the listener use).
func allDocumentIDs(_ c: Collection) throws -> [String] {
    var o = QueryOptions()
    o.allDocsMode = .includeDeleted
    let rows = try c.allDocsQuery(o)
    var ids: [String] = []
    while let r = try rows.next() { if let id = r.docID { ids.append(id) } }
    return ids
}

/// Writes revisions in batches of existing revisions; counts what failed.
final class RevisionImporter {
    let collection: Collection
    private var batch: [Collection.ExistingRevision] = []
    private(set) var written = 0
    private(set) var failures: [(docID: String, message: String)] = []
    private(set) var documents = Set<String>()

    init(_ collection: Collection) { self.collection = collection }

    func add(_ json: [UInt8]) throws {
        let object = try JSONParser.parseObject(String(decoding: json, as: UTF8.self), what: "revision")
        try add(object)
    }

    func add(_ object: JSONObject) throws {
        batch.append(Collection.ExistingRevision(body: object))
        if batch.count >= 500 { try flush() }
    }

    func flush() throws {
        guard !batch.isEmpty else { return }
        let results = try collection.insertExistingRevisions(batch)
        batch.removeAll()
        for r in results {
            if let e = r.error { failures.append((r.docID, e.message)) } else { written += 1; documents.insert(r.docID) }
        }
    }
}

/// Reads a whole file (or standard input for "-").
func readAll(_ path: String) throws -> [UInt8] {
    let fd = path == "-" ? 0 : Glibc.open(path, O_RDONLY)
    guard fd >= 0 else { throw CBLError(.notFound, "cannot read \(path): \(String(cString: strerror(errno)))") }
    defer { if fd != 0 { close(fd) } }
    var data: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 { if errno == EINTR { continue }; throw CBLError.internalError("cannot read \(path): \(String(cString: strerror(errno)))") }
        if n == 0 { break }
        data += buf[0..<n]
    }
    return data
}

/// A file opened for writing, or standard output for nil / "-".
final class OutputFile {
    let fd: Int32
    let path: String?

    init(_ path: String?) throws {
        if let path, path != "-" {
            fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            guard fd >= 0 else { throw CBLError.internalError("cannot write \(path): \(String(cString: strerror(errno)))") }
            self.path = path
        } else {
            fd = 1
            self.path = nil
        }
    }

    func write(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + off, $0.count - off) }
            if n < 0 { if errno == EINTR { continue }; throw CBLError.internalError("write failed: \(String(cString: strerror(errno)))") }
            off += n
        }
    }

    func close() throws {
        if fd != 1 && Glibc.close(fd) != 0 { throw CBLError.internalError("cannot close \(path ?? "output")") }
    }
}

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a collection's documents as JSON lines (every leaf revision, with history and attachments).",
        discussion: """
            Each line is one leaf revision as CouchDB's open_revs gives it: _id, _rev, _revisions, \
            _deleted, _attachments (inline, base64) and the content. `cblite import` writes them \
            back with the same revision IDs. Progress goes to standard error, the summary to \
            standard output. --salvage reads a damaged database row by row: it writes every \
            revision that can still be read and lists the documents that were lost (exit 8 \
            when something was lost).
            """)
    @OptionGroup var db: DatabaseOptions
    @Option(name: .shortAndLong, help: "Output file (default: standard output).") var output: String?
    @Flag(help: "Read what is readable from a damaged database and list what was lost.") var salvage = false

    func run() throws {
        let out = try OutputFile(output)
        // The summary goes to standard error when the documents go to standard output.
        let summaryFD: Int32 = out.fd == 1 ? 2 : 1
        var revisions = 0, documents = 0
        var lost: [JSONValue] = []
        var unreadableRows = 0
        try db.withCollection { _, c in
            if salvage {
                let report = try c.salvage { json in
                    try out.write(json + [UInt8(ascii: "\n")])
                    revisions += 1
                }
                documents = report.documents
                lost = report.lost.map { .object(JSONObject([("id", .string($0.docID)), ("error", .string($0.message))])) }
                unreadableRows = report.unreadableRows
            } else {
                let ids = try allDocumentIDs(c)
                let progress = Progress("export", total: ids.count, json: db.json)
                for id in ids {
                    for json in try leafRevisions(c, docID: id) {
                        try out.write(json + [UInt8(ascii: "\n")])
                        revisions += 1
                    }
                    documents += 1
                    progress.update(documents)
                }
                progress.finish(documents)
            }
        }
        try out.close()
        let target = output ?? "standard output"
        if db.json {
            var o = JSONObject([("documents", .int(Int64(documents))), ("revisions", .int(Int64(revisions))), ("output", .string(target))])
            if salvage { o["lost"] = .array(lost); o["unreadable_rows"] = .int(Int64(unreadableRows)) }
            writeFD(summaryFD, o.jsonText + "\n")
        } else {
            var text = "exported \(documents) documents (\(revisions) revisions) to \(target)\n"
            if salvage {
                text += lost.isEmpty ? "no document known by ID was lost\n"
                    : "lost \(lost.count) documents:\n" + lost.compactMap(\.objectValue).map { "  \($0["id"]?.stringValue ?? ""): \($0["error"]?.stringValue ?? "")" }.joined(separator: "\n") + "\n"
                if unreadableRows > 0 { text += "\(unreadableRows) rows could not be read (documents whose ID is unknown may be among them)\n" }
            }
            writeFD(summaryFD, text)
        }
        if salvage && (!lost.isEmpty || unreadableRows > 0) { throw ExitCode(8) }
    }
}

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read JSON lines (as `cblite export` writes them) into a collection.",
        discussion: """
            A line with _revisions keeps its revision ID and history; a line without _rev is \
            saved as a new document revision. Creates the database with --create. Exit 1 when \
            any line failed (the first 20 failures are listed).
            """)
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "JSON lines file ('-': standard input).") var file: String
    @Flag(help: "Create the database (and the collection) if missing.") var create = false

    func run() throws {
        let data = try readAll(file)
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
            .filter { !$0.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\t") } }
        var parseFailures: [(line: Int, message: String)] = []
        var newDocs = 0
        let importer: RevisionImporter = try db.withCollection(create: create) { _, c in
            let importer = RevisionImporter(c)
            let progress = Progress("import", total: lines.count, unit: "lines", json: db.json)
            for (i, line) in lines.enumerated() {
                do {
                    let object = try JSONParser.parseObject(String(decoding: line, as: UTF8.self), what: "line \(i + 1)")
                    if object["_rev"] == nil {
                        // A plain document: saved as a new revision.
                        _ = try c.saveDocuments([object])
                        newDocs += 1
                    } else {
                        try importer.add(object)
                    }
                } catch let e as CBLError {
                    parseFailures.append((i + 1, e.message))
                }
                progress.update(i + 1)
            }
            try importer.flush()
            progress.finish(lines.count)
            return importer
        }
        let failed = parseFailures.map { "line \($0.line): \($0.message)" } + importer.failures.map { "\($0.docID): \($0.message)" }
        if db.json {
            print(JSONObject([("lines", .int(Int64(lines.count))), ("revisions", .int(Int64(importer.written + newDocs))),
                              ("documents", .int(Int64(importer.documents.count + newDocs))), ("failed", .int(Int64(failed.count))),
                              ("failures", .array(failed.prefix(20).map { .string($0) }))]).jsonText)
        } else {
            print("imported \(importer.written + newDocs) revisions of \(importer.documents.count + newDocs) documents from \(lines.count) lines; \(failed.count) failed")
            for f in failed.prefix(20) { print("  \(f)") }
        }
        if !failed.isEmpty { throw ExitCode(1) }
    }
}

struct Copy: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cp",
        abstract: "Copy every collection's documents (all leaf revisions, history, attachments) into another database.",
        discussion: "The target is a name (in --dir, or --target-dir) or a bundle path; it is created when missing. With --collection, only that collection.")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Target database: a name or a bundle path.") var target: String
    @Option(name: .customLong("target-dir"), help: "Directory of the target (default: --dir).") var targetDir: String?

    func run() throws {
        var targetOptions = try DatabaseOptions.parse([target] + ((targetDir ?? db.dir).map { ["--dir", $0] } ?? []))
        targetOptions.busyTimeout = db.busyTimeout
        if target.hasSuffix(".cblite2") || target.hasSuffix(".cblite2/") { targetOptions.dir = nil }
        let source = try db.open()
        defer { try? source.close() }
        let dest = try targetOptions.open(create: true)
        defer { try? dest.close() }
        if source.path == dest.path { throw ToolError.usage("source and target are the same database") }
        var collections: [(String, String)] = []
        if let (scope, name) = db.collectionSpec {
            collections = [(scope ?? "_default", name)]
        } else {
            for scope in try source.scopeNames() { for name in try source.collectionNames(scope: scope) { collections.append((scope, name)) } }
        }
        var totalDocs = 0, totalRevs = 0, failures: [String] = []
        var summaries: [JSONValue] = []
        for (scope, name) in collections {
            guard let from = try source.collection(scope: scope, name: name) else { continue }
            let to = scope == "_default" && name == "_default" ? try dest.defaultCollection() : try dest.createCollection(scope: scope, name: name)
            let ids = try allDocumentIDs(from)
            let importer = RevisionImporter(to)
            let progress = Progress("cp \(scope).\(name)", total: ids.count, json: db.json)
            for (i, id) in ids.enumerated() {
                for json in try leafRevisions(from, docID: id) { try importer.add(json) }
                progress.update(i + 1)
            }
            try importer.flush()
            progress.finish(ids.count)
            totalDocs += importer.documents.count
            totalRevs += importer.written
            failures += importer.failures.map { "\(scope).\(name) \($0.docID): \($0.message)" }
            summaries.append(.object(JSONObject([("collection", .string("\(scope).\(name)")), ("documents", .int(Int64(importer.documents.count))),
                                                 ("revisions", .int(Int64(importer.written)))])))
        }
        if db.json {
            print(JSONObject([("target", .string(dest.path)), ("documents", .int(Int64(totalDocs))), ("revisions", .int(Int64(totalRevs))),
                              ("collections", .array(summaries)), ("failures", .array(failures.prefix(20).map { .string($0) }))]).jsonText)
        } else {
            print("copied \(totalDocs) documents (\(totalRevs) revisions) in \(collections.count) collection(s) to \(dest.path); \(failures.count) failed")
            for f in failures.prefix(20) { print("  \(f)") }
        }
        if !failures.isEmpty { throw ExitCode(1) }
    }
}

func writeFD(_ fd: Int32, _ text: String) {
    if fd == 2 { writeStderr(text) } else { print(text, terminator: "") }
}

extension JSONObject {
    var jsonText: String { JSONValue.object(self).jsonString }
}
