import XCTest
import Glibc
@testable import CBLiteCore

/// The JavaScript engine (Duktape, compiled in): JSON in and out, the log binding, no I/O,
/// and hostile code (loops, recursion, allocation, eval) failing its call only.
final class JavaScriptEngineTests: XCTestCase {
    private func engine(timeoutMs: UInt32 = 300, memory: Int = 16 << 20) throws -> JSEngine {
        try JSEngine(limits: JSLimits(timeoutMs: timeoutMs, memoryBytes: memory), label: "test")
    }

    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// The failure a call throws (fails the test when it succeeds).
    private func failure(_ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) -> JSFailure? {
        do { try body(); XCTFail("no failure", file: file, line: line); return nil } catch {
            guard let f = error as? JSFailure else { XCTFail("not a JSFailure: \(error)", file: file, line: line); return nil }
            return f
        }
    }

    func testEvaluateAndCallThroughJSON() throws {
        let js = try engine()
        XCTAssertEqual(text(try js.evaluate("1 + 2")), "3")
        XCTAssertEqual(text(try js.evaluate("function f(a, b) { return {sum: a.n + b, s: 'é\\u2028'}; }")), "null")
        XCTAssertEqual(try js.call("f", [.object(JSONObject([("n", .int(40))])), .int(2)]),
                       .object(JSONObject([("sum", .int(42)), ("s", .string("é\u{2028}"))])))
        XCTAssertEqual(text(try js.call("f", argumentsJSON: Array(#"[{"n":1},1]"#.utf8))), #"{"sum":2,"s":"é\u2028"}"#)
        XCTAssertEqual(text(try js.evaluate("undefined")), "null")
        // ES5.1 and some ES2015+: Duktape 2.7.
        XCTAssertEqual(text(try js.evaluate("[1,2,3].map(function (x) { return x * x; }).reduce(function (a, b) { return a + b; })")), "14")
        XCTAssertEqual(text(try js.evaluate("'ab'.repeat(2) + String(2 ** 3)")), #""abab8""#)
        guard case .threw(let message, nil)? = failure({ _ = try js.call("nothing", []) }) else { return XCTFail() }
        XCTAssertTrue(message.contains("nothing is not a function"), message)
    }

    /// Arguments reach a call through cblite's own JSON decoder (js_json.c): the values
    /// JSON.parse gives for the same text — a "__proto__" member as data, the last of
    /// duplicates, escapes, -0, long and exponent numbers — and text that is not JSON throws.
    func testArgumentsDecodeAsJSONParseDoes() throws {
        let js = try engine()
        try js.evaluate("""
            function same(v, text) {
              var w = JSON.parse(text);
              if (JSON.stringify(v) !== JSON.stringify(w)) return 'differs: ' + JSON.stringify(v) + ' vs ' + JSON.stringify(w);
              if (typeof v === 'number' && 1 / v !== 1 / w) return 'sign of zero';
              if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) !== Object.getPrototypeOf(w)) return 'prototype';
              return 'same';
            }
            """)
        let texts = [#"{"__proto__":{"x":1},"a":[1,2.5,-0,1e300,123456789012345678,-3.25e-7],"a":"last"}"#,
                     #""\u00e9\ud83d\ude00 \n\t\"\\\/é😀""#, "-0", "0.1", "[[],{},[[[]]]]", "true", "null", #""plain""#,
                     "1E2", "-1.5e-3", #" [ 1 , { "k" : [ ] } ] "#]
        for t in texts {
            let args = "[" + t + "," + String(decoding: JSONWriter.ordered(.string(t)), as: UTF8.self) + "]"
            XCTAssertEqual(text(try js.call("same", argumentsJSON: Array(args.utf8))), #""same""#, t)
        }
        // Numbers are correctly rounded (strtod), as the engine's native maps read them;
        // Duktape's own parser is one unit off here (…994).
        try js.evaluate("function isTwoTo53(v) { return v === 9007199254740992; }")
        XCTAssertEqual(text(try js.call("isTwoTo53", argumentsJSON: Array("[9007199254740993]".utf8))), "true")
        for bad in ["[1,]", "[01]", #"["a]"#, "[nul]", #"[{"a" 1}]"#, "[1] x", "[1.5.5]", #"["\q"]"#] {
            guard case .threw(let m, _)? = failure({ _ = try js.call("same", argumentsJSON: Array(bad.utf8)) }) else { return XCTFail(bad) }
            XCTAssertTrue(m.contains("SyntaxError"), "\(bad): \(m)")
        }
    }

    /// A map's rows come back as each key's and value's JSON, a line each, as
    /// JSON.stringify writes them (directly for the common values, else through Duktape's).
    func testRowsComeBackAsJSONStringifyWritesThem() throws {
        let js = try engine()
        try js.evaluate(#"""
            function rows() {
              return [[1, null], ['é', [1.5, -0, 9007199254740992, 4503599627370496, NaN, undefined, {a: [1]}, 'q"\\', function () {}]],
                      [[true, false, [[]]], 'x\u2028\u0001'], [-7, 'plain'], [0.1, {toJSON: function () { return 'tj'; }}]];
            }
            function expected() {
              return rows().map(function (r) { return JSON.stringify(r[0]) + '\n' + JSON.stringify(r[1]) + '\n'; }).join('');
            }
            """#)
        let want = try js.call("expected", [])
        XCTAssertEqual(text(try js.callRows("rows", argumentsJSON: Array("[]".utf8))), want.stringValue)
        try js.evaluate("function notRows() { return [[1]]; }")
        guard case .threw? = failure({ _ = try js.callRows("notRows", argumentsJSON: Array("[]".utf8)) }) else { return }
    }

    func testThrownValuesAreDescribed() throws {
        let js = try engine()
        try js.evaluate("function v(x) { if (x) throw({forbidden: 'no ' + x}); throw new TypeError('bad'); }")
        XCTAssertEqual(failure({ _ = try js.call("v", [.string("way")]) }),
                       .threw(message: "[object Object]", thrown: .object(JSONObject([("forbidden", .string("no way"))]))))
        XCTAssertEqual(failure({ _ = try js.call("v", [.null]) }), .threw(message: "TypeError: bad", thrown: nil))
        // A syntax error is a throw too, and the context stays usable.
        guard case .threw(let m, _)? = failure({ try js.evaluate("function (") }) else { return XCTFail() }
        XCTAssertTrue(m.hasPrefix("SyntaxError"), m)
        XCTAssertEqual(text(try js.evaluate("'still here'")), #""still here""#)
        // A thrown value whose description loops: still a throw (described within the time limit).
        guard case .threw? = failure({ try js.evaluate("throw {toString: function () { for (;;) {} }}") }) else {
            return XCTFail("a throw whose toString loops is a throw")
        }
        XCTAssertEqual(text(try js.evaluate("'usable'")), #""usable""#)
    }

    func testLogReachesTheEngineLoggerAndNothingElse() throws {
        let lines = Locked<[String]>([])
        let old = Log.shared.level(.query)
        Log.shared.setLevel(.query, .info)
        Log.shared.setSink { _, _, text in lines.with { $0.append(text) } }
        defer { Log.shared.setSink(nil); Log.shared.setLevel(.query, old) }
        let js = try JSEngine(limits: JSLimits(timeoutMs: 300), label: "_design/d")
        try js.evaluate("__cbl_log('hello ' + 42); __cbl_log({a: 1})")
        XCTAssertEqual(lines.get().filter { $0.hasPrefix("_design/d: log:") }, ["_design/d: log: hello 42", "_design/d: log: [object Object]"])
    }

    /// No binding reaches the process: no module loader, file, network, process or print.
    func testThereIsNoIOBinding() throws {
        let js = try engine()
        let globals = try js.call("eval", [.string("Object.getOwnPropertyNames(this).sort()")])
        guard case .array(let names) = globals else { return XCTFail() }
        let expected = ["Array", "ArrayBuffer", "Boolean", "Buffer", "CBOR", "DataView", "Date", "Duktape", "Error", "EvalError",
                        "Float32Array", "Float64Array", "Function", "Infinity", "Int16Array", "Int32Array", "Int8Array",
                        "JSON", "Math", "NaN", "Number", "Object", "Proxy", "RangeError", "ReferenceError", "Reflect",
                        "RegExp", "String", "Symbol", "SyntaxError", "TextDecoder", "TextEncoder", "TypeError",
                        "URIError", "Uint16Array", "Uint32Array", "Uint8Array", "Uint8ClampedArray", "__cbl_log",
                        "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent", "escape", "eval",
                        "globalThis", "isFinite", "isNaN", "parseFloat", "parseInt", "performance", "undefined", "unescape"]
        XCTAssertEqual(names.compactMap { if case .string(let s) = $0 { return s } else { return nil } }, expected)
        for probe in ["require('fs')", "print('x')", "console.log('x')", "process.exit(1)", "alert(1)",
                      "new XMLHttpRequest()", "fetch('http://x')", "Duktape.modSearch('fs')", "load('/etc/passwd')"] {
            guard case .threw(let m, _)? = failure({ try js.evaluate(probe) }) else { return XCTFail(probe) }
            XCTAssertTrue(m.hasPrefix("ReferenceError") || m.hasPrefix("TypeError"), "\(probe): \(m)")
        }
        // Duktape's own object: nothing on it opens a file or a socket.
        XCTAssertEqual(try js.call("eval", [.string("Object.getOwnPropertyNames(Duktape).sort()")]),
                       try jsonValue(#"["Pointer","Thread","act","compact","dec","enc","env","fin","gc","info","version"]"#))
    }

    func testAnEndlessLoopIsStoppedWithinTheLimit() throws {
        let js = try engine(timeoutMs: 200)
        for loop in ["for (;;) {}", "while (true) { try { for (;;) {} } catch (e) {} }",
                     "eval('for (;;) {}')", "new Function('for (;;) {}')()", "[1].forEach(function () { for (;;) {} })"] {
            let started = MonotonicTime.now()
            XCTAssertEqual(failure({ try js.evaluate(loop) }), .timeout(ms: 200), loop)
            let ms = MonotonicTime.now().milliseconds - started.milliseconds
            XCTAssertGreaterThanOrEqual(ms, 190, loop)
            XCTAssertLessThan(ms, 1500, loop)
        }
        XCTAssertEqual(text(try js.evaluate("'after'")), #""after""#)
    }

    /// Deep recursion, in script and through native functions, is a RangeError well within
    /// a 512 KiB thread stack (the smallest a cblite thread has).
    func testDeepRecursionFailsTheCallOnly() throws {
        let outcomes = Locked<[String]>([])
        let used = StackProbe.bytesUsed(stackSize: 512 << 10) {
            do {
                let js = try JSEngine(limits: JSLimits(timeoutMs: 5000), label: "test")
                for code in ["function f(n) { return f(n + 1) + 1; } f(0)",
                             "function g() { return [1].map(g); } g()",
                             "var o = {}; o.toString = function () { return String(o); }; String(o)",
                             "function h() { return JSON.stringify({toJSON: h}); } h()",
                             "var s = ''; for (var i = 0; i < 5000; i++) s += '('; eval(s)",
                             "var a = []; for (var i = 0; i < 100000; i++) a = [a]; JSON.stringify(a)",
                             "/(((((((((((a)*)*)*)*)*)*)*)*)*)*)*b/.test('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')"] {
                    do { try js.evaluate(code); outcomes.with { $0.append("ok") } } catch {
                        outcomes.with { $0.append("\(error)") }
                    }
                }
                outcomes.with { $0.append(String(decoding: try! js.evaluate("'alive'"), as: UTF8.self)) }
            } catch { outcomes.with { $0.append("engine: \(error)") } }
        }
        let o = outcomes.get()
        XCTAssertEqual(o.count, 8, "\(o)")
        for r in o.dropLast() { XCTAssertTrue(r.hasPrefix("RangeError") || r.hasPrefix("SyntaxError") || r.hasPrefix("execution timeout"), r) }
        XCTAssertEqual(o.last, #""alive""#)
        XCTAssertLessThan(used, 512 << 10)
    }

    func testHugeAllocationsFailTheCallOnly() throws {
        let js = try engine(timeoutMs: 1000, memory: 8 << 20)
        for code in ["var a = []; for (;;) a.push('x' + a.length)",
                     "'x'.repeat(1 << 28)",
                     "new ArrayBuffer(1 << 30)",
                     "var s = 'xx'; for (;;) s = s + s"] {
            XCTAssertEqual(failure({ try js.evaluate(code) }), .memory(bytes: 8 << 20), code)
            XCTAssertLessThanOrEqual(js.memoryUsed, 8 << 20)
        }
        // A script that catches its allocation failures and goes on is stopped by the time limit.
        XCTAssertEqual(failure({ try js.evaluate("var a = []; while (true) { try { a.push(new Array(10000).join('y') + a.length) } catch (e) {} }") }),
                       .timeout(ms: 1000))
        XCTAssertLessThanOrEqual(js.memoryUsed, 8 << 20)
        XCTAssertEqual(text(try js.evaluate("a = null; 'after'")), #""after""#)
        XCTAssertLessThan(js.memoryUsed, 2 << 20, "the failed calls' garbage was collected")
        // A cap smaller than an empty heap: no engine, an error.
        XCTAssertThrowsError(try JSEngine(limits: JSLimits(timeoutMs: 100, memoryBytes: 1024)))
    }

    func testThePoolCompilesOncePerKeyAndDropsAContextThatRanOut() throws {
        let pool = JSEnginePool(maxIdle: 2)
        let setUps = Locked(0)
        let saved = JSLimits.current
        JSLimits.current = JSLimits(timeoutMs: 200)
        defer { JSLimits.current = saved }
        func use(_ key: String, _ code: String) throws -> String {
            try pool.withEngine(key: key, label: key, setUp: { js in
                setUps.with { $0 += 1 }
                try js.evaluate("var calls = 0; function run(code) { calls++; return eval(code); }")
            }) { js in String(decoding: try js.call("run", argumentsJSON: JSONWriter.ordered(.array([.string(code)]))), as: UTF8.self) }
        }
        XCTAssertEqual(try use("a", "calls"), "1")
        XCTAssertEqual(try use("a", "calls"), "2")       // the same context, compiled once
        XCTAssertEqual(setUps.get(), 1)
        XCTAssertThrowsError(try use("a", "throw new Error('x')"))
        XCTAssertEqual(try use("a", "calls"), "4")       // a throw keeps the context
        XCTAssertThrowsError(try use("a", "for (;;) {}"))
        XCTAssertEqual(try use("a", "calls"), "1")       // a timeout drops it
        XCTAssertEqual(setUps.get(), 2)
        XCTAssertEqual(try use("b", "calls"), "1")
        XCTAssertEqual(try use("c", "calls"), "1")
        XCTAssertEqual(pool.idleCount, 2)                // the least recently used went
        pool.removeAll(keyPrefix: "b")
        XCTAssertEqual(pool.idleCount, 1)
        // New limits: new contexts.
        JSLimits.current = JSLimits(timeoutMs: 300)
        XCTAssertEqual(try use("c", "calls"), "1")
    }

    /// Contexts on many threads at once: each used by one thread at a time.
    func testContextsOnManyThreads() throws {
        let pool = JSEnginePool()
        let errors = Locked(0)
        runOnThreads(8) { t in
            for i in 0..<50 {
                do {
                    let r = try pool.withEngine(key: "k", label: "k", setUp: { try $0.evaluate("function add(a, b) { var x = a; for (var j = 0; j < 1000; j++) x += 0; return x + b; }") }) {
                        try $0.call("add", [.int(Int64(t)), .int(Int64(i))])
                    }
                    if r != .int(Int64(t + i)) { errors.with { $0 += 1 } }
                } catch { errors.with { $0 += 1 } }
            }
        }
        XCTAssertEqual(errors.get(), 0)
    }
}
