/// A stored design document (`_design/NAME`) as cblite runs it: its JavaScript views
/// (and, through the same context, its other functions). Read at its current revision;
/// its compiled contexts are pooled per revision (JSEnginePool), so a new revision
/// compiles anew and an unchanged one never recompiles.
public struct DesignDocument: Sendable {
    public let name: String
    public let revID: String
    public let body: JSONObject
    /// Identifies the contexts compiled from this revision (database, collection, ID, rev).
    let poolKey: String

    public var id: String { "_design/" + name }

    /// The design document `_design/name` of the collection; nil when there is none (or it
    /// is deleted). Parsed once per revision (DesignDocumentCache).
    public static func load(_ collection: Collection, name: String) throws -> DesignDocument? {
        try collection.store.designDocuments.load(collection, name: name)
    }

    /// CouchDB's `language` (default "javascript"); only JavaScript design documents run.
    public var language: String { body["language"]?.stringValue ?? "javascript" }

    /// The sources of view `name`: its map and its reduce (a built-in's name or a function).
    public func view(_ name: String) -> (map: String, reduce: String?)? {
        guard language == "javascript", let v = body["views"]?.objectValue?[name]?.objectValue,
              let map = v["map"]?.stringValue else { return nil }
        return (map, v["reduce"]?.stringValue)
    }

    /// The names of its views (views.lib is CommonJS modules, not a view).
    public var viewNames: [String] {
        guard language == "javascript", let views = body["views"]?.objectValue else { return [] }
        return views.members.compactMap { $0.key != "lib" && $0.value.objectValue?["map"]?.stringValue != nil ? $0.key : nil }
    }

    /// What a view's index depends on — its map, its reduce and the modules its map may
    /// require (views.lib) — as a digest: the index is rebuilt when it changes, and only then.
    public func viewSignature(_ name: String) -> String {
        let v = body["views"]?.objectValue
        let parts: JSONValue = .array([v?[name] ?? .null, v?["lib"] ?? .null])
        return DesignDocument.signaturePrefix + Hex.encode(SHA256.hash(JSONWriter.canonical(parts)))
    }

    /// Starts the versions of design-document views' indexes (API views have others).
    static let signaturePrefix = "js:"

    /// Runs `body` with a context of this revision: the prelude and the document loaded.
    public func withEngine<R>(_ body: (JSEngine) throws -> R) throws -> R {
        try JSEnginePool.shared.withEngine(key: poolKey, label: id, setUp: setUp, body)
    }

    /// A context of this revision, taken from the pool (give it back with `give`).
    func takeEngine() throws -> JSEngine {
        try JSEnginePool.shared.take(key: poolKey, label: id, setUp: setUp)
    }

    func give(_ engine: JSEngine) { JSEnginePool.shared.give(key: poolKey, engine) }

    private func setUp(_ engine: JSEngine) throws {
        try engine.evaluate(DesignPrelude.source, fileName: "prelude")
        _ = try engine.call("__cbl_init", argumentsJSON: JSONWriter.ordered(.array([.object(body)])))
    }
}

extension DesignDocument {
    /// The design document `_design/name` of `collection` whose stored JSON is `body`
    /// (an extension: the memberwise initializer stays).
    init(_ collection: Collection, name: String, body: JSONObject) {
        let rev = body["_rev"]?.stringValue ?? ""
        self.init(name: name, revID: rev, body: body,
                  poolKey: "\(collection.database.path)\u{0}\(collection.name)\u{0}\(name)\u{0}\(rev)")
    }
}
