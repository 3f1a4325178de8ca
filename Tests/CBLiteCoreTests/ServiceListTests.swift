import XCTest
import Foundation
@testable import CBLiteCore

/// One stop list per file (ServiceList): a handle's services stop when it closes, the
/// file's when its last handle closes, newest first either way; nothing registers after.
final class ServiceListTests: CBLTestCase {
    /// Records the order of its stops in a log shared with other services.
    final class Recording: Service, @unchecked Sendable {
        let serviceName: String
        let log: Locked<[String]>
        init(_ name: String, _ log: Locked<[String]>) { serviceName = name; self.log = log }
        func stop() { log.with { $0.append(serviceName) } }
    }

    func testAHandlesServicesStopNewestFirstAndOnlyThatHandles() throws {
        let log = Locked<[String]>([])
        let db = try open()
        let other = try open()
        let services = ["a", "b", "c", "other", "unregistered"].map { Recording($0, log) }   // the list holds them weakly
        for s in services[0..<3] { _ = try db.register(s) }
        let kept = try other.register(services[3])
        db.unregister(try db.register(services[4]))
        XCTAssertEqual(db.serviceCount, 3)
        try db.close()
        XCTAssertEqual(log.get(), ["c", "b", "a"], "reverse start order; an unregistered one is not stopped")
        assertStatus(.badRequest, try db.register(Recording("late", log)), "a closed handle takes no service")
        XCTAssertEqual(other.serviceCount, 1)
        other.unregister(kept)
        try other.close()
        XCTAssertEqual(log.get(), ["c", "b", "a"])
    }

    func testTheFilesServicesStopNewestFirstAfterTheHandles() throws {
        let list = ServiceList()
        let log = Locked<[String]>([])
        let handle = NSObject()
        let services = ["file 1", "handle 1", "file 2", "handle 2"].map { Recording($0, log) }
        for s in services[0..<4] { _ = try list.add(s, owner: s.serviceName.hasPrefix("handle") ? handle : nil) }
        do {
            let dropped = Recording("dropped", log)                 // released by its owner: skipped
            _ = try list.add(dropped, owner: nil)
        }
        XCTAssertEqual(list.stop(owner: handle), ["handle 2", "handle 1"])
        XCTAssertEqual(list.stopAll(), ["file 2", "file 1"])
        XCTAssertEqual(log.get(), ["handle 2", "handle 1", "file 2", "file 1"])
        XCTAssertThrowsError(try list.add(Recording("late", log), owner: nil), "a closed file takes no service")
        XCTAssertEqual(list.count(owner: nil), 0)
    }

    /// The store's own services register as they start — the WAL checkpointer at open,
    /// the expiration timer with the first writable handle, the watcher with the first
    /// change observer — so close stops the watcher first (it pokes the timer) and the
    /// checkpointer last (its connection closes before the writer's).
    func testTheStoresServicesRegisterInStartOrder() throws {
        let db = try open()
        let store = db.store
        XCTAssertEqual(store.services.names, ["WAL checkpointer", "expiration timer"])
        let token = try db.defaultCollection().addChangeObserver { _ in }
        XCTAssertEqual(store.services.names, ["WAL checkpointer", "expiration timer", "change watcher"])
        token.remove()
        try db.close()
        XCTAssertEqual(store.services.count(owner: nil), 0, "the last handle's close stopped them all")
        XCTAssertFalse(store.walCheckpointer!.isRunning)
    }
}
