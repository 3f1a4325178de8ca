import CBLiteCore
@testable import CBLiteListener
import Glibc
import XCTest

/// Starts a listener on 127.0.0.1, port 0, over a fresh temporary directory.
class ListenerTestCase: XCTestCase {
    var directory = ""
    var listener: Listener!

    override func setUpWithError() throws {
        var template = Array("/tmp/cblite-listener-test-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { throw CBLError(.internalError, "mkdtemp failed") }
        directory = String(cString: p)
    }

    override func tearDown() {
        listener?.stop()
        listener = nil
        _ = system("rm -rf '\(directory)'")
    }

    /// Starts with `extra` configuration members added to {"directory": ..., "port": 0}.
    @discardableResult
    func start(_ extra: String = "") throws -> Listener {
        let config = "{\"directory\":\"\(directory)\",\"port\":0\(extra.isEmpty ? "" : "," + extra)}"
        listener = try Listener(configuration: config)
        try listener.start()
        XCTAssertGreaterThan(listener.port, 0)
        return listener
    }

    func client(timeoutSeconds: Int = 10) throws -> TestHTTPClient { try TestHTTPClient(port: listener.port, timeoutSeconds: timeoutSeconds) }
}

import NIOHTTP1

enum HTTPRequestHeadLike {
    static func make(_ uri: String) -> HTTPRequestHead { HTTPRequestHead(version: .http1_1, method: .GET, uri: uri) }
}
