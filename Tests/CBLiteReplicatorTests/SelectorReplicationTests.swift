import CBLiteCore
import CBLiteListener
@testable import CBLiteReplicator
import XCTest

/// Replications by a Mango `selector` (issue 29): a push evaluates it on this side's
/// changes; a pull sends it to the peer (`_changes?filter=_selector`, as CouchDB's
/// replicator does), here cblite's own listener.
final class SelectorReplicationTests: ReplicatorTestCase {
    func testPushSendsOnlyTheDocumentsTheSelectorMatches() throws {
        try serve()
        for i in 1...10 { try put(localColl, "d\(i)", "{\"i\":\(i),\"kind\":\"\(i % 2 == 0 ? "even" : "odd")\"}") }
        let s = try replicate(#""direction":"push","selector":{"kind":"even","i":{"$gt":4}}"#)
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(s.documentsPushed, 3)
        XCTAssertEqual(try body(remoteColl, "d6")["i"], .int(6))
        XCTAssertThrowsError(try remoteColl.get(docID: "d4"))
        XCTAssertThrowsError(try remoteColl.get(docID: "d5"))
    }

    func testPullAsksThePeerForTheSelectorsDocuments() throws {
        try serve()
        for i in 1...10 { try put(remoteColl, "r\(i)", "{\"i\":\(i)}") }
        let s = try replicate(#""direction":"pull","selector":{"i":{"$lte":3}}"#)
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(s.documentsPulled, 3)
        XCTAssertEqual(try body(localColl, "r3")["i"], .int(3))
        XCTAssertThrowsError(try localColl.get(docID: "r4"))
    }

    func testAnInvalidSelectorIsRefusedWithCouchDBsText() throws {
        XCTAssertThrowsError(try ReplicatorConfiguration(json: #"{"url":"http://x/db","selector":{"i":{"$bad":1}}}"#)) { e in
            XCTAssertEqual((e as? CBLError)?.message, "invalid_operator: Invalid operator: $bad")
        }
    }
}
