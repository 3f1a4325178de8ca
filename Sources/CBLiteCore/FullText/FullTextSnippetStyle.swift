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
