import CBLiteCore
import CBLiteDiscovery
import CBLiteListener
import Glibc
import XCTest

/// Without an Avahi daemon on the system bus, advertising and browsing fail at once with
/// 503 and a message that says so, and nothing else is affected.
final class NoDaemonTests: XCTestCase {
    private var saved: String?

    override func setUp() {
        saved = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) }
        // A bus nobody listens on: the client cannot reach any daemon.
        setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/cblite-no-bus", 1)
    }

    override func tearDown() {
        if let saved { setenv("DBUS_SYSTEM_BUS_ADDRESS", saved, 1) } else { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
    }

    func testAdvertisingWithoutDaemonIs503() {
        XCTAssertThrowsError(try Advertiser(name: "nobody", port: 5984, txt: [])) { error in
            let e = error as? CBLError
            XCTAssertEqual(e?.status, .busy)
            XCTAssertTrue(e?.message.contains("not reachable") ?? false, e?.message ?? "\(error)")
        }
    }

    func testBrowsingWithoutDaemonIs503() {
        XCTAssertThrowsError(try PeerBrowser { _ in XCTFail("no event expected") }) { error in
            let e = error as? CBLError
            XCTAssertEqual(e?.status, .busy)
            XCTAssertTrue(e?.message.contains("avahi-daemon") ?? false, e?.message ?? "\(error)")
        }
    }

    func testInvalidTypeIs400BeforeAvahiIsAsked() {
        XCTAssertThrowsError(try PeerBrowser(type: "nope") { _ in }) { XCTAssertEqual(($0 as? CBLError)?.status, .badRequest) }
    }

    /// A listener told to advertise itself does not run unadvertised: start fails with the
    /// 503 and leaves nothing listening; without "advertise" it runs as ever.
    func testListenerWithAdvertiseFailsCleanlyWithoutDaemon() throws {
        let l = try Listener(configuration: #"{"port": 0, "advertise": {"name": "tablet"}}"#)
        XCTAssertThrowsError(try l.start()) { XCTAssertEqual(($0 as? CBLError)?.status, .busy) }
        XCTAssertFalse(l.isRunning)
        XCTAssertNil(l.advertisement)
        let plain = try Listener(configuration: #"{"port": 0}"#)
        try plain.start()
        XCTAssertTrue(plain.isRunning)
        plain.stop()
    }

    func testAdvertiseOptionIsChecked() {
        for bad in [#""tablet""#, #"{"name": ""}"#, #"{"name": "x", "type": "couchdb"}"#, #"{"name": "x", "port": 1}"#] {
            XCTAssertThrowsError(try Listener(configuration: #"{"advertise": \#(bad)}"#), bad) {
                XCTAssertEqual(($0 as? CBLError)?.status, .badRequest)
                XCTAssertTrue((($0 as? CBLError)?.message ?? "").contains("advertise"))
            }
        }
    }
}
