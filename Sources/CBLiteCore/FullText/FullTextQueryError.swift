/// A malformed full-text query: what is wrong and where — `position` counts Unicode
/// scalars (characters) from 0 at the start of the query text.
public struct FullTextQueryError: Error, CustomStringConvertible, Sendable, Equatable {
    public let position: Int
    public let message: String

    public init(_ message: String, at position: Int) {
        self.message = message
        self.position = position
    }

    public var description: String { "\(message) at position \(position)" }

    /// The engine's form (the C ABI's error: 400, this text).
    public var cblError: CBLError { CBLError.badRequest("invalid full-text query: \(description)") }
}
