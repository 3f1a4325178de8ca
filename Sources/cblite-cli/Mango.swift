import ArgumentParser
import CBLiteCore
import Glibc

private func printError(_ s: String) { let b = Array((s + "\n").utf8); _ = b.withUnsafeBytes { write(2, $0.baseAddress, $0.count) } }

/// Runs a Mango call, giving its errors the tool's exit codes (a CBLError's).
private func mango<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let e as MangoError { throw e.cblError }
}

struct Find: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find documents with a Mango selector (CouchDB's _find).",
        discussion: """
            SELECTOR is a JSON object ('{"age": {"$gt": 30}}'). --sort and --fields take JSON arrays \
            ('[{"age": "desc"}]', '["_id", "age"]'); a sort needs an index that serves it (`cblite index create`). \
            Prints one document per line (--json: CouchDB's whole answer); the warning and the bookmark of the \
            next page go to standard error.
            """)
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "The selector (JSON).") var selector: String
    @Option(help: "Sort (JSON array).") var sort: String?
    @Option(help: "Fields to return (JSON array).") var fields: String?
    @Option(help: "At most this many documents (default: all).") var limit: Int64?
    @Option(help: "Skip this many first.") var skip: Int64?
    @Option(help: "Continue after this bookmark.") var bookmark: String?
    @Flag(help: "Print the plan (CouchDB's _explain) instead.") var explain = false

    func run() throws {
        var q = JSONObject([("selector", try JSONParser.parse(selector))])
        if let sort { q["sort"] = try JSONParser.parse(sort) }
        if let fields { q["fields"] = try JSONParser.parse(fields) }
        q["limit"] = .int(limit ?? Int64.max)
        if let skip { q["skip"] = .int(skip) }
        if let bookmark { q["bookmark"] = .string(bookmark) }
        try db.withCollection { _, c in
            let request = try mango { try FindRequest(.object(q)) }
            if explain {
                print(try mango { try c.explain(request, databaseName: db.database) }.jsonString)
                return
            }
            let cursor = try mango { try c.find(request) }
            var docs: [JSONValue] = []
            while let d = try mango({ try cursor.next() }) {
                if db.json { docs.append(d) } else { print(String(decoding: JSONWriter.ordered(d), as: UTF8.self)) }
            }
            if db.json {
                var out = JSONObject([("docs", .array(docs)), ("bookmark", .string(cursor.bookmark))])
                if let w = cursor.warning { out["warning"] = .string(w) }
                print(String(decoding: JSONWriter.ordered(.object(out)), as: UTF8.self))
            } else {
                if let w = cursor.warning { printError("warning: \(w)") }
                printError("bookmark: \(cursor.bookmark)")
            }
        }
    }
}

struct IndexCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index", abstract: "List, create and remove Mango json indexes (design documents, as CouchDB's).",
        subcommands: [IndexList.self, IndexCreate.self, IndexRemove.self])
}

struct IndexList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List the indexes.")
    @OptionGroup var db: DatabaseOptions

    func run() throws {
        try db.withCollection { _, c in
            let list = try mango { try c.mangoIndexListJSON() }
            if db.json { print(list.jsonString); return }
            for i in list.objectValue?["indexes"]?.arrayValue ?? [] {
                let o = i.objectValue ?? JSONObject()
                print("\(o["ddoc"]?.stringValue ?? "-")\t\(o["name"]?.stringValue ?? "")\t\(o["def"].map { String(decoding: JSONWriter.ordered($0), as: UTF8.self) } ?? "")")
            }
        }
    }
}

struct IndexCreate: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "create", abstract: "Create a json index over fields.")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Fields (JSON array, or names separated by commas).") var fields: String
    @Option(help: "Index name.") var name: String?
    @Option(help: "Design document (with or without _design/).") var ddoc: String?
    @Option(name: .customLong("partial-filter"), help: "Partial filter selector (JSON).") var partialFilter: String?

    func run() throws {
        let f: JSONValue = fields.hasPrefix("[") ? try JSONParser.parse(fields)
            : .array(fields.split(separator: ",").map { .string(String($0)) })
        var index = JSONObject([("fields", f)])
        if let partialFilter { index["partial_filter_selector"] = try JSONParser.parse(partialFilter) }
        var body = JSONObject([("index", .object(index))])
        if let name { body["name"] = .string(name) }
        if let ddoc { body["ddoc"] = .string(ddoc) }
        try db.withCollection { _, c in
            let r = try mango { try c.createMangoIndex(.object(body)) }
            print("\(r.result)\t\(r.id)\t\(r.name)")
        }
    }
}

struct IndexRemove: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove a json index.")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Design document (with or without _design/).") var ddoc: String
    @Argument(help: "Index name.") var name: String

    func run() throws {
        try db.withCollection { _, c in try mango { try c.deleteMangoIndex(ddoc: ddoc, type: "json", name: name) } }
    }
}
