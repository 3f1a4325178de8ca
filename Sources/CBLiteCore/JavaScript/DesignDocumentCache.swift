/// The design documents of a database as last parsed, per collection and name: a load
/// looks up the stored current revision (one indexed read, no body) and reuses the parsed
/// document when it is the same revision — a view query loads its design document several
/// times (the listener's lookup, the query, the index update), and each used to read and
/// parse it whole. A new revision, a deletion or a purge is seen at the next load.
///
/// A collection's design documents as a whole (`current`: the Mango, text and nouveau
/// indexes they define) are kept with their stamp, the sequences of their rows
/// (DocumentStore.designSequences), and so are the values made from them (`value`): a
/// `_find` used to read and parse every design document to list its indexes (~0.1 M
/// instructions a find with one, bench_mango). A read compares the stamp (one statement
/// over the document-ID index) and reads and parses them again only when it changed —
/// a document written, deleted, purged or replicated in, by this process or another.
/// The cache lives in the Store, not the Collection: the listener makes a Collection per
/// request.
final class DesignDocumentCache: @unchecked Sendable {
    private let parsed = LockedValue<[String: DesignDocument]>([:])
    /// Per collection ID: its design documents at a stamp, and the values made from them.
    private let listed = LockedValue<[Int64: Listing]>([:])

    private struct Listing {
        let stamp: [Int64]
        let documents: [DesignDocument]
        /// One value a type (`Current.value`).
        var values: [ObjectIdentifier: Any] = [:]
    }

    /// The design document `_design/name` of `collection` at its current revision; nil
    /// when there is none (or it is deleted).
    func load(_ collection: Collection, name: String) throws -> DesignDocument? {
        let docID = "_design/" + name
        let key = Self.key(collection, name)
        try collection.check()
        try DocumentBody.validateDocID(docID)
        return try collection.mapMissingTable {
            try collection.store.read { conn in
                guard let (_, flags, rev) = try collection.docStore.summary(conn, docID: docID), !flags.contains(.deleted) else {
                    parsed.withLock { _ = $0.removeValue(forKey: key) }
                    return nil
                }
                if let known = parsed.withLock({ $0[key] }), known.revID == rev { return known }
                let json = try collection.docStore.current(conn, docID: docID) { s in
                    DocumentJSON.render(docID: docID, rev: s.borrowedNonEmpty(2) ?? UnsafeBufferPointer(start: nil, count: 0),
                                        deleted: false, body: s.borrowedBytes(3))
                }
                guard let json else { return nil }
                let ddoc = try Self.parse(collection, name: name, json: json)
                parsed.withLock { $0[key] = ddoc }
                return ddoc
            }
        }
    }

    /// The live design documents of a collection as they are now, and the values made from
    /// them (see `value`).
    struct Current {
        /// In document-ID order.
        let documents: [DesignDocument]
        fileprivate let stamp: [Int64]
        fileprivate let collectionID: Int64
        fileprivate let cache: DesignDocumentCache
        /// Values made are kept: false inside a transaction (its sequences may be rolled
        /// back and reused, so its stamps do not name one state).
        fileprivate let keeps: Bool

        /// The value of type T made from these design documents: `make`'s, kept until they
        /// change. One `make` a type: the type names the value (a marker type names an
        /// action done once per state of the design documents, such as dropping the
        /// storage of indexes they no longer define).
        func value<T>(_ make: ([DesignDocument]) throws -> T) rethrows -> T {
            let type = ObjectIdentifier(T.self)
            let known = cache.listed.withLock { all -> T? in
                guard let l = all[collectionID], l.stamp == stamp else { return nil }
                return l.values[type] as? T
            }
            if let known { return known }
            let made = try make(documents)
            if keeps {
                cache.listed.withLock { all in
                    if all[collectionID]?.stamp == stamp { all[collectionID]!.values[type] = made }
                }
            }
            return made
        }

        /// The indexes `define` makes from these design documents, once `dropOrphans` has run
        /// with them for this state of them: the storage of indexes they no longer define
        /// goes before a query chooses among them (a query that raced the deletion of its
        /// own index may leave it until the next change).
        func indexes<Index>(_ define: ([DesignDocument]) -> [Index],
                            droppingOrphans dropOrphans: ([Index]) throws -> Void) throws -> [Index] {
            let defined = value(define)
            _ = try value { _ -> OrphansDropped<Index> in
                try dropOrphans(defined)
                return OrphansDropped()
            }
            return defined
        }
    }

    /// Names the drop of orphan storage done for one kind of index (`Current.indexes`).
    private struct OrphansDropped<Index> {}

    /// The live design documents of `collection`: the kept ones when their stamp is
    /// unchanged, else read again (each parsed only when its revision is new).
    func current(_ collection: Collection) throws -> Current {
        try collection.check()
        let store = collection.store
        return try collection.mapMissingTable {
            try store.read { conn in
                // Inside the calling thread's transaction its own writes are seen: kept
                // values are still right when the stamp matches (kept stamps are of
                // committed states, and its writes take sequences none of them holds),
                // but what it reads is not kept.
                let keeps = !store.ownedByCurrentThread
                let stamp = try collection.docStore.designSequences(conn)
                if let kept = listed.withLock({ $0[collection.id] }), kept.stamp == stamp {
                    return Current(documents: kept.documents, stamp: stamp, collectionID: collection.id, cache: self, keeps: keeps)
                }
                // The stamp is taken again from the rows read, so that it is theirs.
                var rowStamp: [Int64] = []
                var documents: [DesignDocument] = []
                try collection.docStore.designRows(conn) { s in
                    rowStamp.append(s.int(1))
                    guard !DocFlags(rawValue: s.int(2)).contains(.deleted), let docID = s.string(0) else { return }
                    let name = String(docID.dropFirst(8))
                    let key = Self.key(collection, name)
                    let rev = s.string(3) ?? ""
                    if let known = parsed.withLock({ $0[key] }), known.revID == rev {
                        documents.append(known)
                        return
                    }
                    let json = DocumentJSON.render(docID: docID, rev: s.borrowedNonEmpty(3) ?? UnsafeBufferPointer(start: nil, count: 0),
                                                   deleted: false, body: s.borrowedBytes(4))
                    // A design document that is not an object defines nothing (as when read one by one).
                    guard let ddoc = try? Self.parse(collection, name: name, json: json) else { return }
                    if keeps { parsed.withLock { $0[key] = ddoc } }
                    documents.append(ddoc)
                }
                if keeps { listed.withLock { $0[collection.id] = Listing(stamp: rowStamp, documents: documents) } }
                return Current(documents: documents, stamp: rowStamp, collectionID: collection.id, cache: self, keeps: keeps)
            }
        }
    }

    private static func key(_ collection: Collection, _ name: String) -> String { "\(collection.id)\u{0}\(name)" }

    private static func parse(_ collection: Collection, name: String, json: [UInt8]) throws -> DesignDocument {
        let body = try json.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0, what: "design document") }
        return DesignDocument(collection, name: name, body: body)
    }
}
