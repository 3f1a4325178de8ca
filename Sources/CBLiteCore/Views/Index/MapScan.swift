import CSQLCipher
import Glibc

/// Scans a view index in key order (or for a list of keys), a page at a time. Each page
/// is a fresh read positioned after the previous page's last row, so no read transaction
/// stays open between pages, and a query over millions of rows holds one page in memory.
/// A page's texts sit in one arena, from which rows are lent without copying.
final class MapScan: RowSource {
    private let store: Store
    private let table: String?
    private let descending: Bool
    private let range: QueryOptions.Range
    private let keys: [[UInt8]]?                 // CollatableKeys of "keys", in their order
    /// Rows read with their documents, in the same statement (a Mango find's scan): lent
    /// with the document rendered (`doc`), or with joinedRevID and joinedBody for an ID or
    /// revision that needs escaping.
    private let documents: DocumentStore.LiveJoin?
    /// Rows a page reads at most (a smaller page for rows read with their documents).
    private let pageSize: Int
    private var keyIndex = 0
    private var arena: RowArena
    /// The arena is the caller's (a find's, whose entries keep the rows' texts where the
    /// page copy put them instead of copying each again): the caller resets it, once it has
    /// taken every row of the page (`next(...mayFetch: false)`), never MapScan.
    private let sharesArena: Bool
    /// Arenas of earlier index pages whose rows are still lent (a caller's page of rows
    /// may span index pages), and arenas free again since the last recycle. An arena
    /// added for a held page starts small and grows to its page: with "keys", each key is
    /// an index page of its own, so a caller's page may span hundreds of them.
    private var heldArenas: [RowArena] = []
    private var spareArenas: [RowArena] = []
    private static let heldArenaCapacity = 2048
    private static let maxSpareArenas = 8
    private var lentSinceRecycle = false
    /// The current page's rows, copied into the arena and decoded (cblite_copy_scan_rows);
    /// a row whose key gives its JSON back gets the JSON made for its run of equal keys.
    private let rows: UnsafeMutablePointer<cblite_scan_row>
    private var rowCount = 0
    private var rowIndex = 0
    /// A page of one named key: its rows read no key, and are lent with this key and its
    /// JSON (given at lending, not written into every row after the copy: a second pass
    /// over a page's rows cost cache misses).
    private var pageHasOneKey = false
    private var oneKey = cblite_span(offset: 0, length: -1)
    private var oneKeyJSON = cblite_span(offset: 0, length: -1)
    private var cursor: (key: [UInt8], docID: String, n: Int64)?
    /// The rows the next page reads at most (at most `pageSize`; a find sets it to what its
    /// limit can still use), and its bytes: a page ends at the first row that reaches them.
    var pageRows: Int
    var pageBytes = Int(Int32.max)
    /// Each document has one row at most (a Mango json index's map emits once): a page
    /// after the first needs no statement for the rest of the last row's document.
    private let rowPerDocument: Bool
    private var scanTexts: [(conds: [String], text: SQLText)] = []
    private var done = false
    private var scratch = JSONWriter(canonical: false, capacity: 32)
    static let pageSize = 2048

    init(store: Store, table: String?, options: QueryOptions) {
        self.store = store
        self.table = table
        descending = options.descending
        range = options.keyRange()
        keys = options.keys.map { $0.map { CollatableKey.encode($0) } }
        documents = nil
        arena = RowArena(capacity: 64 * 1024)
        sharesArena = false
        rowPerDocument = false
        pageSize = MapScan.pageSize
        pageRows = MapScan.pageSize
        rows = .allocate(capacity: pageSize)
        if table == nil { done = true }
    }

    /// A scan of a raw key range (a Mango index's, whose ends are not JSON keys), its rows
    /// read with their current documents when `documents` is given (`pageSize` rows a page),
    /// their texts in `arena` when given (see `sharesArena`).
    init(store: Store, table: String?, range: QueryOptions.Range, descending: Bool,
         documents: DocumentStore? = nil, pageSize: Int = MapScan.pageSize, arena shared: RowArena? = nil,
         rowPerDocument: Bool = false) {
        arena = shared ?? RowArena(capacity: 64 * 1024)
        sharesArena = shared != nil
        self.rowPerDocument = rowPerDocument
        self.store = store
        self.table = table
        self.descending = descending
        self.range = range
        keys = nil
        self.documents = documents.map(ViewStorage.documentsJoin)
        self.pageSize = pageSize
        pageRows = pageSize
        rows = .allocate(capacity: pageSize)
        if table == nil { done = true }
    }

    deinit { rows.deallocate() }

    /// Lends the current index page's rows from where the last call stopped, up to `max`:
    /// a new index page is read only by a call that has lent no row yet, so that its
    /// errors (and a damaged row's) are the error of a call lending none.
    func next(into out: UnsafeMutablePointer<QueryRowRef>, max: Int) throws -> Int {
        try next(into: out, max: max, mayFetch: true)
    }

    /// The same; unless `mayFetch`, 0 at the end of the current index page.
    func next(into out: UnsafeMutablePointer<QueryRowRef>, max: Int, mayFetch: Bool) throws -> Int {
        while rowIndex >= rowCount {
            if done || !mayFetch { return 0 }
            try fetchPage()
        }
        var i = rowIndex
        let end = min(rowCount, i + max)
        defer { rowIndex = i }
        // The loop's state in locals: read through the class on every row (the writes to
        // `out` may alias it as far as the compiler knows), it cost ~40 instructions a row.
        let rows = rows, oneKeyed = pageHasOneKey, oneKey = oneKey, oneKeyJSON = oneKeyJSON, joined = documents != nil
        var base = arena.baseAddress
        @inline(__always) func text(_ s: cblite_span) -> UnsafeBufferPointer<UInt8>? {
            s.length < 0 ? nil : UnsafeBufferPointer(start: base + Int(s.offset), count: Int(s.length))
        }
        var n = 0
        while i < end {
            var r = rows[i]
            if oneKeyed {
                r.key = oneKey
                if r.fields.key_json.length < 0 { r.fields.key_json = oneKeyJSON }
            }
            guard r.damaged == 0, r.fields.key_json.length >= 0 else {
                if n > 0 { break }
                i += 1
                throw IndexRow.damaged()
            }
            i += 1
            if r.fields.value.length > 0 {
                lend(r, into: &out[n])                  // may store a redirected ID: the arena may move
                base = arena.baseAddress
            } else {
                let docID = text(r.docid)
                out[n] = QueryRowRef(key: text(r.fields.key_json)!, value: nil, docID: docID, sourceDocID: docID, doc: nil,
                                     error: nil, sequence: r.fields.sequence, collatableKey: text(r.key))
            }
            if joined && r.doc_found != 0 {
                if r.doc_rendered != 0 {
                    out[n].doc = text(r.doc_body)
                } else {
                    // An empty revision ID is read as none (NULL): lent empty, as found.
                    out[n].joinedRevID = text(r.doc_rev) ?? UnsafeBufferPointer(start: base, count: 0)
                    out[n].joinedBody = text(r.doc_body)
                }
            }
            n += 1
        }
        lentSinceRecycle = true
        return n
    }

    /// A row with a value (which may redirect it to another document).
    private func lend(_ r: cblite_scan_row, into row: inout QueryRowRef) {
        var docID = arena.buffer(RowArena.Span(r.docid))
        if r.fields.value.length > 0, let v = arena.buffer(RowArena.Span(r.fields.value)), v.first == UInt8(ascii: "{"),
           let target = MapScan.redirect(v) {
            docID = arena.buffer(arena.store(target))          // may move the arena: buffers are taken after it
        }
        row.key = arena.buffer(RowArena.Span(r.fields.key_json))!
        row.value = arena.buffer(RowArena.Span(r.fields.value))
        row.docID = docID
        row.sourceDocID = arena.buffer(RowArena.Span(r.docid))
        row.doc = nil
        row.error = nil
        row.sequence = r.fields.sequence
        row.collatableKey = arena.buffer(RowArena.Span(r.key))
        row.joinedRevID = nil
        row.joinedBody = nil
    }

    func recycle() {
        lentSinceRecycle = false
        guard !heldArenas.isEmpty else { return }
        for a in heldArenas where spareArenas.count < MapScan.maxSpareArenas {
            a.reset()
            spareArenas.append(a)
        }
        heldArenas.removeAll(keepingCapacity: true)
    }

    /// An empty arena for the next index page. The current one is kept while rows lent
    /// from it may still be held.
    private func freshArena() {
        if sharesArena { return }
        guard lentSinceRecycle else { return arena.reset() }
        heldArenas.append(arena)
        arena = spareArenas.popLast() ?? RowArena(capacity: MapScan.heldArenaCapacity)
        lentSinceRecycle = false
    }

    /// The statement text of a page segment: within a scan only its conditions vary, so
    /// the few it meets are kept here (the shared list of ScanShapes compares whole
    /// shapes: ~13,000 instructions a look-up in a Mango find, callgrind).
    private func scanText(table: String, conds: [String], readsKey: Bool) -> SQLText {
        for t in scanTexts where t.conds == conds { return t.text }
        let text = ViewStorage.scanText(ViewStorage.ScanShape(table: table, conds: conds, descending: descending,
                                                              byKeys: keys != nil, readsKey: readsKey, limit: pageSize,
                                                              documents: documents))
        scanTexts.append((conds, text))
        return text
    }

    /// The statements of the next page, run in order until it is full (see
    /// Range.scanSegments: conditions SQLite's seek takes whole, no row values).
    private func pageSegments() -> [ScanSegment]? {
        guard let keys else {
            return range.scanSegments(descending: descending, cursor: cursor, cursorDocumentDone: rowPerDocument)
        }
        guard keyIndex < keys.count else { return nil }
        return ScanSegment.rows(ofKey: keys[keyIndex], descending: descending, cursor: cursor)
    }

    /// The key every row of the next page has, when the query names one: "keys" (one at a
    /// time) or a range whose two ends are the same key ("key"). Its rows need not read it.
    private var pageKey: [UInt8]? {
        if let keys { return keyIndex < keys.count ? keys[keyIndex] : nil }
        guard let lo = range.lower, range.lowerInclusive, range.upperInclusive, range.upper == lo else { return nil }
        return lo
    }

    private func fetchPage() throws {
        rowCount = 0
        rowIndex = 0
        freshArena()
        guard let table, let segments = pageSegments() else { done = true; return }
        let fixedKey = pageKey
        let wanted = min(max(pageRows, 1), pageSize), pageStart = arena.usedBytes
        var exhausted = true                    // every statement of the page ran to its end
        rowCount = try store.read { conn -> Int in
            var count = 0
            for segment in segments where count < wanted {
                let text = scanText(table: table, conds: segment.conds, readsKey: fixedKey == nil)
                let budget = pageBytes - (arena.usedBytes - pageStart)
                guard let (n, done) = try ViewStorage.scanPage(conn, text, args: segment.args, { s in
                    try arena.copyScanRows(from: s, withKey: fixedKey == nil, document: documents,
                                           maxRows: wanted - count, byteBudget: max(budget, 1), into: rows + count)
                }) else { return 0 }                   // the index was deleted meanwhile
                count += n
                if !done { exhausted = false; break }  // full, in rows or bytes
            }
            return count
        }
        // Keys that give their JSON back get it made once for a run of rows with equal keys.
        var key = RowArena.Span.none, keyJSON = RowArena.Span.none
        func setKey(_ span: RowArena.Span) {
            key = span
            scratch = JSONWriter(canonical: false, capacity: 32)
            if let bytes = arena.buffer(span), CollatableKey.appendJSON(bytes, to: &scratch) {
                keyJSON = arena.store(scratch.bytes)
            } else {
                keyJSON = .none
            }
        }
        pageHasOneKey = fixedKey != nil
        if let fixedKey {
            setKey(arena.store(fixedKey))
            oneKey = cblite_span(offset: key.offset, length: key.length)
            oneKeyJSON = cblite_span(offset: keyJSON.offset, length: keyJSON.length)
        } else {
            for i in 0..<rowCount {
                let k = RowArena.Span(rows[i].key)
                if !arena.equal(k, key) { setKey(k) }
                if rows[i].fields.key_json.length < 0 { rows[i].fields.key_json = cblite_span(offset: keyJSON.offset, length: keyJSON.length) }
            }
        }
        if rowCount > 0 {
            let last = rows[rowCount - 1]
            let lastKey = pageHasOneKey ? oneKey : last.key
            cursor = (Array(arena.buffer(RowArena.Span(lastKey)) ?? UnsafeBufferPointer(start: nil, count: 0)),
                      String(decoding: arena.buffer(RowArena.Span(last.docid)) ?? UnsafeBufferPointer(start: nil, count: 0), as: UTF8.self),
                      last.fields.n)
        }
        if exhausted {
            if keys != nil {
                keyIndex += 1
                cursor = nil
            } else {
                done = true
            }
        }
    }

    /// The seeds' redirection: a value that is an object with a string "_id" names the
    /// document the row refers to.
    static func redirect(_ value: UnsafeBufferPointer<UInt8>?) -> String? {
        guard let value, value.first == UInt8(ascii: "{"), contains(value, "\"_id\""),
              let o = try? JSONParser.parseObject(bytes: value) else { return nil }
        return o["_id"]?.stringValue
    }

    private static func contains(_ haystack: UnsafeBufferPointer<UInt8>, _ needle: StaticString) -> Bool {
        let n = needle.utf8CodeUnitCount
        guard haystack.count >= n, let base = haystack.baseAddress else { return false }
        let first = needle.utf8Start[0]
        for i in 0...(haystack.count - n) where base[i] == first && memcmp(base + i, needle.utf8Start, n) == 0 { return true }
        return false
    }
}
