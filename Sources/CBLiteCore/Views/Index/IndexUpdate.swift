/// The result of bringing an index up to date: which generation it went from and to, and
/// the keys of the rows that were added or removed (nil: too many, or unknown).
public struct IndexUpdate: Sendable {
    public let generationBefore: Int64
    public let generationAfter: Int64
    public let changedKeys: [[UInt8]]?
    /// The index's state when the update finished (a query reads it instead of loading it again).
    let state: ViewStorage.State
    public var changed: Bool { generationBefore != generationAfter }
}
