import XCTest
@testable import CBLiteCore
final class PlaceholderTests: XCTestCase { func testNothing() {} }
