/// How snippets are cut and highlighted: the marks around each matched term, the text
/// standing for the cut-off parts, and the most tokens a snippet has (FTS5's snippet()
/// arguments, 1...64).
public struct FullTextSnippetStyle: Sendable, Equatable {
    public var open: String
    public var close: String
    public var ellipsis: String
    public var tokens: Int

    public init(open: String = "<b>", close: String = "</b>", ellipsis: String = "…", tokens: Int = 16) {
        self.open = open
        self.close = close
        self.ellipsis = ellipsis
        self.tokens = min(64, max(1, tokens))
    }
}

extension FullTextSnippetStyle {
    /// Reads a snippets option: true (the default style), false (nil: no snippets) or
    /// {"open", "close", "ellipsis", "tokens"} (each optional). `name`: the option's name,
    /// for the errors.
    public init?(option v: JSONValue, name: String) throws {
        switch v {
        case .bool(true): self.init()
        case .bool(false): return nil
        case .object(let s):
            self.init()
            for (k, v) in s.members {
                switch (k, v) {
                case ("open", .string(let x)): open = x
                case ("close", .string(let x)): close = x
                case ("ellipsis", .string(let x)): ellipsis = x
                case ("tokens", .int(let n)) where n >= 1 && n <= 64: tokens = Int(n)
                default: throw CBLError.badRequest("invalid snippet option: \(k)")
                }
            }
            if open.isEmpty { throw CBLError.badRequest("the snippets' \"open\" mark must not be empty") }
        default: throw CBLError.badRequest("\"\(name)\" must be true, false or an object")
        }
    }
}
