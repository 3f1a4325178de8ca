/// A map function: called with each document, emits rows. It must be pure (the seeds'
/// rules); it may be called on any thread.
public typealias MapFunction = (MapDocument, Emitter) throws -> Void
