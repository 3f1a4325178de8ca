import ArgumentParser
import CBLiteCore
import Glibc

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the database's integrity (SQLite's pages and cblite's revision trees, counters, sequences).",
        discussion: "Exit 0 when sound, 8 when damaged (the problems are listed).")
    @OptionGroup var db: DatabaseOptions

    func run() throws {
        let problems = try db.withDatabase { d in try Progress.activity("integrity check", json: db.json) { try d.integrityCheck() } }
        if db.json {
            print(JSONObject([("ok", .bool(problems.isEmpty)), ("problems", .array(problems.map { .string($0) }))]).jsonText)
        } else if problems.isEmpty {
            print("ok: no problems found")
        } else {
            print("\(problems.count) problem(s) found:")
            for p in problems { print("  \(p)") }
        }
        if !problems.isEmpty { throw ExitCode(8) }
    }
}

struct Cat: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print documents (their current revisions, with _id and _rev).")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Document IDs.") var docIDs: [String]

    func run() throws {
        guard !docIDs.isEmpty else { throw ToolError.usage("give at least one document ID") }
        try db.withCollection { _, c in
            for id in docIDs {
                let bytes = try c.get(docID: id, options: [.conflicts])
                if db.json { printJSON(bytes) } else { try printPretty(bytes) }
            }
        }
    }
}

struct Revs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw a document's revision tree.",
        discussion: "Each revision shows its flags: * current, leaf, deleted, conflict (another undeleted leaf), no body (compacted).")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Document ID.") var docID: String

    func run() throws {
        let tree = try db.withCollection { _, c in try c.revisionTree(docID: docID) }
        if db.json { print(tree); return }
        print(try RevisionTreeDrawing.draw(JSONParser.parse(tree)))
    }
}

/// Draws cblite's revision tree JSON (Collection.revisionTree) with box-drawing lines.
enum RevisionTreeDrawing {
    static func draw(_ tree: JSONValue) throws -> String {
        guard let o = tree.objectValue, let revs = o["revisions"]?.arrayValue else { return tree.jsonString }
        var children: [String: [JSONObject]] = [:]
        var roots: [JSONObject] = []
        let nodes = revs.compactMap(\.objectValue)
        let known = Set(nodes.compactMap { $0["rev"]?.stringValue })
        for n in nodes {
            if let p = n["parent"]?.stringValue, known.contains(p) { children[p, default: []].append(n) } else { roots.append(n) }
        }
        let undeletedLeaves = nodes.filter { $0["leaf"]?.boolValue == true && $0["deleted"]?.boolValue != true }.count
        func label(_ n: JSONObject) -> String {
            var flags: [String] = []
            let current = n["current"]?.boolValue == true
            if current { flags.append("current") }
            if n["deleted"]?.boolValue == true { flags.append("deleted") }
            if n["leaf"]?.boolValue == true {
                flags.append("leaf")
                if !current && n["deleted"]?.boolValue != true && undeletedLeaves > 1 { flags.append("conflict") }
            }
            if n["has_body"]?.boolValue != true { flags.append("no body") }
            return (current ? "* " : "") + (n["rev"]?.stringValue ?? "?") + (flags.isEmpty ? "" : "  (" + flags.joined(separator: ", ") + ")")
        }
        func generation(_ n: JSONObject) -> Int { Int((n["rev"]?.stringValue ?? "0").split(separator: "-").first ?? "0") ?? 0 }
        func ordered(_ list: [JSONObject]) -> [JSONObject] {
            list.sorted { (generation($0), $0["rev"]?.stringValue ?? "") < (generation($1), $1["rev"]?.stringValue ?? "") }
        }
        var lines = ["\(o["id"]?.stringValue ?? "") (sequence \(o["sequence"]?.jsonString ?? "?"))"]
        func walk(_ n: JSONObject, _ prefix: String, _ last: Bool) {
            lines.append(prefix + (last ? "└── " : "├── ") + label(n))
            let kids = ordered(children[n["rev"]?.stringValue ?? ""] ?? [])
            for (i, k) in kids.enumerated() { walk(k, prefix + (last ? "    " : "│   "), i == kids.count - 1) }
        }
        let r = ordered(roots)
        for (i, n) in r.enumerated() { walk(n, "", i == r.count - 1) }
        return lines.joined(separator: "\n")
    }
}

struct Query: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Query a view's index by name, or all documents (without a view name).",
        discussion: """
            A view's map and reduce functions live in the program that defined them, so the tool \
            reads the index's rows as that program last left it (update=false, unreduced) — except \
            a design document's JavaScript view, named DDOC/VIEW, which the tool updates and reduces. Keys are JSON (--key '"a"'). \
            --options takes CouchDB's query options as one JSON object; flags override it.
            """)
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "View name (omit for all documents).") var view: String?
    @Option(help: "Only this key (JSON).") var key: String?
    @Option(name: .customLong("start-key"), help: "First key (JSON; for all documents, a document ID as JSON string).") var startKey: String?
    @Option(name: .customLong("end-key"), help: "Last key (JSON).") var endKey: String?
    @Option(help: "At most this many rows.") var limit: Int64?
    @Option(help: "Skip this many rows first.") var skip: Int64?
    @Flag(help: "Descending order.") var descending = false
    @Flag(name: .customLong("include-docs"), help: "Include each row's document.") var includeDocs = false
    @Flag(name: .customLong("include-deleted"), help: "All documents: include deleted ones.") var includeDeleted = false
    @Option(help: "CouchDB query options as a JSON object.") var options: String?

    func run() throws {
        var o = try options.map { try JSONParser.parseObject($0, what: "--options") } ?? JSONObject()
        func json(_ s: String?, _ name: String) throws { if let s { o[name] = try JSONParser.parse(s) } }
        try json(key, "key"); try json(startKey, "startkey"); try json(endKey, "endkey")
        if let limit { o["limit"] = .int(limit) }
        if let skip { o["skip"] = .int(skip) }
        if descending { o["descending"] = .bool(true) }
        if includeDocs { o["include_docs"] = .bool(true) }
        if includeDeleted { o["all_docs_mode"] = .string("include_deleted") }
        try db.withCollection { _, c in
            let design = try view.flatMap { try c.designView(named: $0) }
            var o = o
            if view != nil && design == nil { o["update"] = .bool(false) }
            let q = try QueryOptions(object: o)
            if let view, design == nil, !(try c.viewNames().contains(view)) {
                throw CBLError(.notFound, "view \"\(view)\" has no index in this collection (the tool reads indexes a program built; "
                               + "views here: \((try c.viewNames()).joined(separator: ", ").nilIfEmpty ?? "none"))")
            }
            let result = try design?.query(q) ?? view.map { try c.view(named: $0).query(q) } ?? c.allDocsQuery(q)
            var rows: [JSONValue] = []
            while let r = try result.next() {
                var row = JSONObject()
                if let id = r.docID { row["id"] = .string(id) }
                row["key"] = try JSONParser.parse(r.keyJSON)
                if let v = r.valueJSON { row["value"] = try JSONParser.parse(v) }
                if let d = r.doc { row["doc"] = try JSONParser.parse(String(decoding: d, as: UTF8.self)) }
                if let e = r.error { row["error"] = .string(e) }
                rows.append(.object(row))
            }
            if db.json {
                print(JSONObject([("total_rows", .int(result.totalRows)), ("offset", .int(result.offset)), ("rows", .array(rows))]).jsonText)
                return
            }
            for r in rows.compactMap(\.objectValue) {
                var cols = [r["key"]?.jsonString ?? "null"]
                if let id = r["id"]?.stringValue { cols.insert(id, at: 0) }
                if let v = r["value"] { cols.append(v.jsonString) }
                if let d = r["doc"] { cols.append(d.jsonString) }
                print(cols.joined(separator: "\t"))
            }
            print("(\(rows.count) of \(result.totalRows) rows)")
        }
    }
}

struct ListCollections: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "lscoll", abstract: "List the collections (SCOPE.NAME) with their document counts.")
    @OptionGroup var db: DatabaseOptions

    func run() throws {
        try db.withDatabase { d in
            var out: [JSONValue] = []
            for scope in try d.scopeNames() {
                for name in try d.collectionNames(scope: scope) {
                    guard let c = try d.collection(scope: scope, name: name) else { continue }
                    out.append(.object(JSONObject([("scope", .string(scope)), ("name", .string(name)), ("documents", .int(try c.count))])))
                }
            }
            if db.json { print(JSONValue.array(out).jsonString); return }
            for c in out.compactMap(\.objectValue) {
                print("\(c["scope"]?.stringValue ?? "").\(c["name"]?.stringValue ?? "")\t\(c["documents"]?.jsonString ?? "0") documents")
            }
        }
    }
}

struct MakeCollection: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mkcoll", abstract: "Create a collection (SCOPE.NAME, or NAME in the default scope).")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "SCOPE.NAME or NAME.") var name: String
    @Flag(help: "Create the database if missing.") var create = false

    func run() throws {
        var d = db
        d.collection = name
        try d.withCollection(create: true) { _, c in
            if db.json { print(JSONObject([("scope", .string(c.scope)), ("name", .string(c.name))]).jsonText) }
            else { print("\(c.scope).\(c.name)") }
        }
    }
}

struct Reindex: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rebuild the database's SQL indexes (after a collation library update, or to repair an index that `check` reports).")
    @OptionGroup var db: DatabaseOptions

    func run() throws {
        try db.withDatabase { d in try Progress.activity("reindex", json: db.json) { try d.reindex() } }
        if db.json { print("{\"reindexed\":true}") } else { print("reindexed") }
    }
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
