import CBLiteCore
import CBLiteDiscovery
import XCTest

/// A resolved peer as the C ABI, the tool and Python show it.
final class PeerTests: XCTestCase {
    private func peer(addresses: [String], txt: [String]) -> Peer {
        Peer(name: "Kitchen tablet", type: "_couchdb._tcp", domain: "local", host: "tablet.local", port: 5984,
             addresses: addresses, txt: ServiceTXT(parsing: txt))
    }

    func testURLUsesTheFirstAddressAndTheAdvertisedScheme() {
        XCTAssertEqual(peer(addresses: ["10.0.0.5", "fe80::1"], txt: ["tls=0"]).url, "http://10.0.0.5:5984/")
        XCTAssertEqual(peer(addresses: ["2001:db8::5"], txt: ["tls=1"]).url, "https://[2001:db8::5]:5984/")
        XCTAssertNil(peer(addresses: [], txt: []).url)
    }

    func testJSONCarriesWhatTheTXTSays() throws {
        let fp = String(repeating: "0f", count: 32)
        let p = peer(addresses: ["10.0.0.5"], txt: ["txtvers=1", "tls=1", "sha256=\(fp)", "db=a,b", "path=/"])
        let o = try JSONParser.parseObject(String(decoding: JSONWriter.ordered(.object(p.json)), as: UTF8.self), what: "peer")
        XCTAssertEqual(o["name"]?.stringValue, "Kitchen tablet")
        XCTAssertEqual(o["url"]?.stringValue, "https://10.0.0.5:5984/")
        XCTAssertEqual(o["databases"]?.arrayValue?.compactMap(\.stringValue), ["a", "b"])
        XCTAssertEqual(o["tls"]?.boolValue, true)
        XCTAssertEqual(o["sha256"]?.stringValue, fp)
        XCTAssertEqual(o["txt"]?.objectValue?["path"]?.stringValue, "/")
        let gone = PeerEvent.disappeared(name: "x", type: "_couchdb._tcp", domain: "local").json
        XCTAssertEqual(gone["event"]?.stringValue, "disappeared")
        XCTAssertEqual(gone["peer"]?.objectValue?["name"]?.stringValue, "x")
    }
}
