import CDuktape

/// The versions of the engines compiled or linked into the library, as
/// `/_node/_local/_versions` reports them: the JavaScript engine that runs design
/// documents, and the ICU library and collator that order view and Mango keys (a change
/// of collator version changes sort keys: IndexFormat keys its index layout on it).
public enum EngineVersions {
    public static let javascriptEngine = "duktape"
    /// The compiled-in Duktape's version (DUK_VERSION = major * 10000 + minor * 100 + patch).
    public static let javascriptVersion: String = {
        let v = Int(cblite_js_version())
        return "\(v / 10000).\(v / 100 % 100).\(v % 100)"
    }()
    public static var icuLibraryVersion: String { ICU.version }
    public static var collatorVersion: String { ICU.shared.collatorVersion }
    public static var collationAlgorithmVersion: String { ICU.shared.collationAlgorithmVersion }
}
