import CBLiteCore
import CBLiteListener
@testable import CBLiteReplicator
import Glibc
import XCTest

/// Every log domain of include/cblite.h emits when its part of the library works.
final class LoggingTests: ReplicatorTestCase {
    func testEveryDomainEmits() throws {
        let seen = LockedValue<[LogDomain: [String]]>([:])
        for d in LogDomain.allCases { Log.shared.setLevel(d, .debug) }
        Log.shared.setSink { d, _, text in seen.withLock { $0[d, default: []].append(text) } }
        defer {
            Log.shared.setSink(nil)
            for d in LogDomain.allCases { Log.shared.setLevel(d, .warning) }
        }
        let other = try Database.open(name: "logged", directory: directory)     // database, storage
        let coll = try other.defaultCollection()
        let token = try coll.addChangeObserver { _ in }                           // changes
        defer { token.remove() }
        try put(coll, "d", "{\"n\":1}")
        try other.sendNotifications()
        let view = try coll.view(named: "byN")                                    // query
        view.setMapReduce(map: { _, emitter in emitter.emit(.int(1), nil) }, reduce: nil, version: "1")
        _ = try view.updateIndex()
        try serve()                                                                // listener
        let r = try Replicator(collection: coll, configuration: try ReplicatorConfiguration(json: "{\"url\":\"\(remoteURL)\",\"direction\":\"push\"}"))
        try r.start()                                                              // replication
        XCTAssertTrue(r.waitUntilStopped(timeoutMs: 30_000))
        try other.close()
        let got = seen.withLock { $0 }
        for d in LogDomain.allCases {
            XCTAssertFalse(got[d, default: []].isEmpty, "domain \(d) never emitted")
        }
        XCTAssertTrue(got[.query, default: []].contains { $0.contains("updated index of view byN") }, "\(got[.query] ?? [])")
        XCTAssertTrue(got[.replication, default: []].contains { $0.contains("done (1 document(s) written") }, "\(got[.replication] ?? [])")
    }
}
