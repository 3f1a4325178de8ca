/// A collection of a database: the handle through which documents are read and written.
public final class Collection: @unchecked Sendable {
    public let database: Database
    public let id: Int64
    public let scope: String
    public let name: String
    /// The collection's document rows and every statement on them.
    let docStore: DocumentStore
    /// Documents whose updates go straight to the general save path (attachments).
    let generalPathDocuments = GeneralPathDocuments()

    /// The database's store, kept here as a stored `let`: read through a computed
    /// property it came back retained, and every read retained and released the Store,
    /// whose reference count reader threads on two cores then wrote in turn.
    let store: Store

    init(database: Database, id: Int64, scope: String, name: String) {
        self.database = database
        store = database.store
        self.id = id
        self.scope = scope
        self.name = name
        docStore = DocumentStore(collectionID: id)
    }

    /// Fails when the database handle is closed or the collection was deleted.
    func check() throws {
        try database.checkOpen()
        if store.isCollectionDeleted(id) { throw CBLError.notFound("collection \(scope).\(name) has been deleted") }
    }

    public var count: Int64 {
        get throws { try check(); return try store.collectionMeta(id).docCount }
    }

    /// Deleted documents whose tombstones are kept (CouchDB's doc_del_count): the stored
    /// documents less the live ones, both from one snapshot (inside the calling thread's
    /// transaction, with its changes). The live count is kept as documents change; this
    /// one counts the table, so its cost grows with the collection.
    public var deletedCount: Int64 {
        get throws {
            try check()
            return try mapMissingTable {
                if store.ownedByCurrentThread {
                    return try store.read { try docStore.storedCount($0) } - store.collectionMeta(id).docCount
                }
                return try store.read { conn in
                    try conn.exec("BEGIN")          // one snapshot for both counts
                    defer { try? conn.exec("COMMIT") }
                    return try docStore.storedCount(conn) - CollectionMeta.load(id, conn).docCount
                }
            }
        }
    }

    public var lastSequence: Int64 {
        get throws { try check(); return try store.collectionMeta(id).lastSeq }
    }

    /// Maps "no such table" (the collection was deleted by another process) to 404.
    func mapMissingTable<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as CBLError where e.status == .internalError && e.message.contains("no such table") {
            throw CBLError.notFound("collection \(scope).\(name) has been deleted")
        }
    }
}
