import CBLiteBase

/// Named request options as CouchDB takes them, from either of their two sources: a
/// query string (`revs=true`, arrays as JSON text) or a JSON object (the C ABI's
/// `options_json`: `{"revs": true}`). Readers such as `RevisionOptionsReader` are written
/// once against this, so both sources mean the same thing.
public protocol OptionSource {
    /// The names present, in order (a name may repeat in a query string).
    var optionNames: [String] { get }
    /// `true`/`false`; nil when absent; 400 for anything else.
    func bool(_ name: String) throws -> Bool?
    /// A list of strings; nil when absent; 400 for anything else.
    func stringArray(_ name: String) throws -> [String]?
}

extension OptionSource {
    public func bool(_ name: String, default d: Bool) throws -> Bool { try bool(name) ?? d }

    /// 400 naming the first option not in `known` (the C ABI's rule: a misspelt option is
    /// an error there, where a query string's unknown parameters are ignored, as CouchDB).
    public func requireKnown(_ known: Set<String>) throws {
        if let unknown = optionNames.first(where: { !known.contains($0) }) {
            throw CBLError.badRequest("unknown option \"\(unknown.prefix(80))\"")
        }
    }
}

extension QueryParameters: OptionSource {
    public var optionNames: [String] { items.map(\.name) }
}

/// A JSON object's members as options.
public struct JSONOptionSource: OptionSource {
    public let object: JSONObject

    public init(_ object: JSONObject) { self.object = object }

    /// The options in `json` (nil or empty: none); 400 when it is not a JSON object.
    public init(json: String?) throws {
        guard let json, !json.isEmpty else { self.init(JSONObject()); return }
        self.init(try JSONParser.parseObject(json, what: "options"))
    }

    public var optionNames: [String] { object.members.map(\.key) }

    public func bool(_ name: String) throws -> Bool? { try object[name].map { try $0.boolOption(name) } }

    public func stringArray(_ name: String) throws -> [String]? { try object[name].map { try $0.stringArrayOption(name) } }
}
