/// Hooks called by the document and collection code so that indexes — views' and
/// full-text ones (FullTextStorage) — never keep rows of documents that no longer exist
/// (a purge leaves no sequence behind to index).
public enum ViewIndexRegistry {
    /// Removes a purged document's rows from every view of its collection (inside the
    /// purging transaction).
    static func documentPurged(_ conn: Connection, collectionID: Int64, docID: String) throws {
        for id in try ViewStorage.viewIDs(conn, collectionID: collectionID) {
            try ViewStorage.removeDocument(conn, id, docID: docID)
        }
        for (id, _) in try FullTextStorage.indexes(conn, collectionID: collectionID) {
            try FullTextStorage.removeDocument(conn, id, docID: docID)
        }
    }

    /// Drops the indexes of every view of a deleted collection.
    static func collectionDeleted(_ conn: Connection, collectionID: Int64) throws {
        for id in try ViewStorage.viewIDs(conn, collectionID: collectionID) { try ViewStorage.drop(conn, id) }
        for (id, _) in try FullTextStorage.indexes(conn, collectionID: collectionID) { try FullTextStorage.drop(conn, id) }
    }
}
