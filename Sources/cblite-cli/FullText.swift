import ArgumentParser
import CBLiteCore
import Glibc

private func printError(_ s: String) { let b = Array((s + "\n").utf8); _ = b.withUnsafeBytes { write(2, $0.baseAddress, $0.count) } }

struct Search: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Search a full-text index (`cblite text-index create`).",
        discussion: """
            QUERY: terms (both must match), "phrases", prefixes (data*), AND / OR / NOT, a NEAR b, \
            NEAR/3, title:term, +required -excluded, parentheses; operators in upper case. Prints one hit per \
            line: score, document ID, and the matched fields' snippets (--json: {"hits": [...], "bookmark"}); \
            the bookmark of the next page goes to standard error. With one full-text index in the collection \
            --index may be left out.
            """)
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "The query.") var query: String
    @Option(help: "The full-text index's name.") var index: String?
    @Option(help: "Its design document, when the name is in several.") var ddoc: String?
    @Option(help: "Match unscoped terms in these fields only (names separated by commas).") var fields: String?
    @Option(help: "A Mango selector the documents must match too (JSON).") var selector: String?
    @Option(help: "At most this many hits (default 25).") var limit: Int = FullTextSearchRequest.defaultJSONLimit
    @Option(help: "Skip this many first.") var skip: Int = 0
    @Option(help: "Continue after this bookmark.") var bookmark: String?
    @Flag(name: .customLong("include-docs"), help: "Add each hit's document (with --json).") var includeDocs = false

    func run() throws {
        var r = FullTextSearchRequest(query: query, limit: limit, skip: skip, bookmark: bookmark, includeDocs: includeDocs)
        r.fields = fields.map { $0.split(separator: ",").map(String.init) }
        if let selector {
            do { r.selector = try Selector(json: selector) } catch let e as MangoError { throw e.cblError }
        }
        try db.withCollection { _, c in
            let name: String
            if let index { name = index } else {
                let names = Set(try c.textIndexes().map(\.name))
                guard names.count == 1 else {
                    throw CBLError.badRequest("name the full-text index with --index (the collection has \(names.isEmpty ? "none" : names.sorted().joined(separator: ", ")))")
                }
                name = names.first!
            }
            let found = try c.search(index: name, ddoc: ddoc, r)
            if db.json { print(found.json.jsonString); return }
            for h in found.hits {
                let snippets = h.snippets.map { "\($0.field): \($0.text)" }.joined(separator: " | ")
                print("\(h.score)\t\(h.docID)\t\(snippets)")
            }
            if let b = found.bookmark { printError("bookmark: \(b)") }
        }
    }
}

struct TextIndexCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "text-index", abstract: "List, create and remove full-text indexes (text indexes in design documents).",
        subcommands: [TextIndexList.self, TextIndexCreate.self, TextIndexRemove.self])
}

struct TextIndexList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List the full-text indexes.")
    @OptionGroup var db: DatabaseOptions

    func run() throws {
        try db.withCollection { _, c in
            let list = try c.textIndexes()
            if db.json { print(JSONValue.array(list.map(\.json)).jsonString); return }
            for i in list {
                let a = i.analyzer
                let options = [a.stemming ? "stemming" : nil, a.foldDiacritics ? nil : "no-folding",
                               a.stopWords.isEmpty ? nil : "stop-words:\(a.stopWords.count)"].compactMap { $0 }
                print("\(i.ddoc)\t\(i.name)\t\(i.fields.joined(separator: ","))\t\(options.joined(separator: ","))")
            }
        }
    }
}

struct TextIndexCreate: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "create", abstract: "Create (or redefine) a full-text index over fields.")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Index name.") var name: String
    @Argument(help: "Fields (names separated by commas; dotted paths).") var fields: String
    @Option(help: "Design document (default: _design/NAME).") var ddoc: String?
    @Flag(help: "English (Porter) stemming.") var stemming = false
    @Option(name: .customLong("stop-words"), help: "Words never indexed (separated by commas; 'english': a built-in list).") var stopWords: String?
    @Flag(name: .customLong("keep-diacritics"), help: "Do not fold diacritics (café ≠ cafe).") var keepDiacritics = false
    @Option(name: .customLong("partial-filter"), help: "Only documents matching this selector (JSON).") var partialFilter: String?

    func run() throws {
        let words = stopWords == "english" ? FullTextAnalyzer.englishStopWords
            : (stopWords ?? "").split(separator: ",").map(String.init)
        let partial: Selector?
        do { partial = try partialFilter.map { try Selector(json: $0) } } catch let e as MangoError { throw e.cblError }
        let index = try FullTextIndex(ddoc: ddoc ?? name, name: name, fields: fields.split(separator: ",").map(String.init),
                                      analyzer: FullTextAnalyzer(foldDiacritics: !keepDiacritics, stemming: stemming, stopWords: words),
                                      partialFilter: partial)
        try db.withCollection { _, c in
            print("\(try c.createTextIndex(index))\t\(index.ddoc)\t\(index.name)")
        }
    }
}

struct TextIndexRemove: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove a full-text index.")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Index name.") var name: String
    @Option(help: "Its design document, when the name is in several.") var ddoc: String?

    func run() throws {
        try db.withCollection { _, c in try c.deleteTextIndex(name: name, ddoc: ddoc) }
    }
}
