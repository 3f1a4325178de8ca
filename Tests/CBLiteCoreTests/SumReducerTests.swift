import XCTest
@testable import CBLiteCore

/// The built-in `_sum` as CouchDB 3.5's (couch_query_servers: builtin_sum_rows and its
/// eunit cases): numbers, arrays, objects, their mixes, and the error object a value it
/// cannot sum gives, by itself and through views (group levels, ranges, descending, chunks
/// re-reduced).
final class SumReducerTests: CBLCollectionTestCase {
    var c: Collection { coll }

    /// builtin_sum_rows over values given as JSON texts, in the order CouchDB meets them.
    func fold(_ values: String...) throws -> String {
        String(decoding: Collation.compactJSON(CouchSum.fold(try values.map { try jsonValue($0) })), as: UTF8.self)
    }

    func error(causedBy cause: String) -> String {
        #"{"error":"builtin_reduce_error","reason":"\#(CouchSum.reason)","caused_by":\#(cause)}"#
    }

    func testNumbersAndArrays() throws {
        XCTAssertEqual(try fold("1", "2"), "3")
        XCTAssertEqual(try fold("1.5", "2"), "3.5")
        XCTAssertEqual(try fold("[1,4,6]", "1"), "[2,4,6]")              // a number goes to item 0
        XCTAssertEqual(try fold("1", "[1,4,6]"), "[2,4,6]")
        XCTAssertEqual(try fold("[3,2,4]", "[0,3,3]"), "[3,5,7]")
        XCTAssertEqual(try fold("[1]", "[1,2,3]", "[]"), "[2,2,3]")     // the longer's tail kept
        XCTAssertEqual(try fold("[]"), "[0]")                             // 0 + [] is [0]
        XCTAssertEqual(try fold("[1,\"x\"]"), #"[1,"x"]"#)                // a tail is not looked at...
        XCTAssertEqual(try fold("[1,\"x\"]", "[1]"), #"[2,"x"]"#)
        XCTAssertEqual(try fold("[1,\"x\"]", "[1,1]"), error(causedBy: #"["x"]"#))   // ...until it is added to
        XCTAssertEqual(try fold("5", "[\"a\"]"), error(causedBy: "[5]"))  // CouchDB names the sum's tail
    }

    func testObjectsSumFieldByField() throws {
        // couch_query_servers' sum_values_test, both ways round.
        let x = #"{"a":1,"b":[1,2],"c":{"d":3},"g":1}"#
        let y = #"{"a":2,"b":3,"c":{"e":5},"f":1,"g":1}"#
        let z = #"{"a":3,"b":[4,2],"c":{"d":3,"e":5},"f":1,"g":2}"#
        XCTAssertEqual(try fold(x, y), z)
        XCTAssertEqual(try fold(y, x), z)
        XCTAssertEqual(try fold(#"{"b":1,"a":{"z":1,"y":2}}"#), #"{"b":1,"a":{"z":1,"y":2}}"#)   // one object: as it is
        XCTAssertEqual(try fold(#"{"b":1,"a":{"z":1,"y":2}}"#, #"{"é":1,"b":1,"Z":2}"#),
                       #"{"Z":2,"a":{"z":1,"y":2},"b":2,"é":1}"#)      // merged: bytewise key order
        XCTAssertEqual(try fold("-1", "1", #"{"a":1}"#), #"{"a":1}"#)    // an object added to 0 is taken whole
    }

    func testValuesItCannotSumGiveTheErrorObject() throws {
        XCTAssertEqual(try fold(#""pea""#, "1"), error(causedBy: #""pea""#))
        XCTAssertEqual(try fold("1", "null"), error(causedBy: "null"))
        XCTAssertEqual(try fold("true"), error(causedBy: "true"))
        XCTAssertEqual(try fold(#"{"a":1}"#, "2"), error(causedBy: "2"))
        XCTAssertEqual(try fold(#"{"a":1}"#, "[2]"), error(causedBy: "[2]"))
        XCTAssertEqual(try fold(#"{"a":{"b":1}}"#, #"{"a":2}"#), error(causedBy: "2"))
        XCTAssertEqual(try fold(#"{"a":[1]}"#, #"{"a":["x"]}"#), error(causedBy: "[1]"))
        // Where CouchDB crashes (case_clause): the error object, caused by the object.
        XCTAssertEqual(try fold("2", #"{"a":1}"#), error(causedBy: #"{"a":1}"#))
        XCTAssertEqual(try fold("0.5", "-0.5", #"{"a":1}"#), error(causedBy: #"{"a":1}"#))   // 0.0 is not 0
        XCTAssertEqual(try fold(#"{"a":1}"#, #"{"a":{"b":1}}"#), error(causedBy: #"{"b":1}"#))
        XCTAssertEqual(try fold(#"{"error":"mine"}"#), error(causedBy: #"{"error":"mine"}"#))
        // A failed partial reduction met again (rereduce) is the reduction, whatever follows.
        let failed = error(causedBy: #""pea""#)
        XCTAssertEqual(try fold("5", failed, "\"zz\""), failed)
        XCTAssertEqual(try fold(#"{"a":1}"#, #"{"a":\#(failed)}"#), failed)   // nested, as CouchDB's recursion finds it
        XCTAssertEqual(try fold(#"{"error":"builtin_reduce_error"}"#), #"{"error":"builtin_reduce_error"}"#)
    }

    /// CouchDB's replay (rest-design seq 91-92): a view emitting names, reduced by _sum,
    /// answers 200 with the error object, caused by the last row's value.
    func testAViewOfStringsReducesToTheErrorOfItsLastRow() throws {
        for (id, k, v) in [("d01", "fruit", "apple"), ("d02", "fruit", "banana"), ("d06", "grain", "rice"), ("d07", "veg", "pea"),
                           ("d04", "veg", "carrot")] {
            _ = try c.put(docID: id, json: #"{"k":"\#(k)","v":"\#(v)"}"#, parent: nil)
        }
        let v = try keyView(c, reduce: .sum)
        XCTAssertEqual(try rows(v).map(\.valueJSON), [error(causedBy: #""pea""#)])      // veg/d07: last
        XCTAssertEqual(try rows(v, #"{"descending":true}"#).map(\.valueJSON), [error(causedBy: #""apple""#)])
        XCTAssertEqual(try rows(v, #"{"group":true}"#).map(\.valueJSON),
                       [error(causedBy: #""banana""#), error(causedBy: #""rice""#), error(causedBy: #""pea""#)])
        XCTAssertEqual(try rows(v, #"{"endkey":"grain"}"#).map(\.valueJSON), [error(causedBy: #""rice""#)])
        XCTAssertEqual(try rows(v, #"{"reduce":false,"limit":1}"#).map(\.valueJSON), [#""apple""#])
    }

    func testObjectsThroughGroupLevels() throws {
        let docs: [(String, String, String)] = [
            ("a", #"["x",1]"#, #"{"n":1,"m":{"p":[1,2]}}"#), ("b", #"["x",2]"#, #"{"n":2,"m":{"p":3}}"#),
            ("c", #"["y",1]"#, #"{"q":5,"n":1}"#), ("d", #"["y",2]"#, #""oops""#),
        ]
        for (id, k, v) in docs { _ = try c.put(docID: id, json: #"{"k":\#(k),"v":\#(v)}"#, parent: nil) }
        let v = try keyView(c, reduce: .sum)
        XCTAssertEqual(try rows(v, #"{"group_level":1,"endkey":["x",{}]}"#).map(\.valueJSON), [#"{"m":{"p":[4,2]},"n":3}"#])
        XCTAssertEqual(try rows(v, #"{"group_level":1}"#).map(\.valueJSON),
                       [#"{"m":{"p":[4,2]},"n":3}"#, error(causedBy: #""oops""#)])
        let lone = try rows(v, #"{"reduce":false,"key":["y",1]}"#).map(\.valueJSON)          // one object: the row's value as is
        XCTAssertEqual(try rows(v, #"{"group":true,"startkey":["y"]}"#).map(\.valueJSON), lone + [error(causedBy: #""oops""#)])
        XCTAssertEqual(try rows(v, #"{"endkey":["y",1]}"#).map(\.valueJSON), [#"{"m":{"p":[4,2]},"n":4,"q":5}"#])
    }

    /// Past a chunk, the chunks' sums are summed again (newest first): objects still merge,
    /// and a chunk's error object becomes the whole reduction's.
    func testChunksRereducedKeepObjectsAndErrors() throws {
        let saved = Reduction.defaultChunkSize
        Reduction.defaultChunkSize = 2
        defer { Reduction.defaultChunkSize = saved }
        try db.begin()
        var third: String?
        for i in 0..<9 {
            let put = try c.put(docID: String(format: "d%02d", i), json: #"{"k":\#(i),"v":{"n":\#(i),"a":[1]}}"#, parent: nil)
            if i == 3 { third = put.revID }
        }
        try db.commit()
        let v = try keyView(c, reduce: .sum)
        XCTAssertEqual(try rows(v).map(\.valueJSON), [#"{"a":[9],"n":36}"#])
        _ = try c.put(docID: "d03", json: #"{"k":3,"v":"bad"}"#, parent: third)
        XCTAssertEqual(try rows(v).map(\.valueJSON), [error(causedBy: #""bad""#)])
        XCTAssertEqual(try rows(v, #"{"startkey":4}"#).map(\.valueJSON), [#"{"a":[5],"n":30}"#])
        XCTAssertEqual(try rows(v, #"{"group":true,"key":3}"#).map(\.valueJSON), [error(causedBy: #""bad""#)])
    }
}
