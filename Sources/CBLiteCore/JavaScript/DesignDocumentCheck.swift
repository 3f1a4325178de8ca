/// CouchDB's check of a design document when it is written (couch_mrview:validate and
/// couch_db's filters check): its `views` and `filters` have the right shapes, its views
/// name a map and a known built-in reduce, and its JavaScript functions compile. A failure
/// refuses the write (400) in CouchDB's words; validate_doc_update is not compiled here, as
/// CouchDB does not. Compiled in a pooled context under the usual limits; a function
/// whose expression loops or runs out of memory as it is evaluated is a compilation error
/// too (CouchDB's query server would time out: a 500 os_process_error there).
enum DesignDocumentCheck {
    /// The built-in reduces CouchDB accepts.
    static let builtinReduces: Set<String> = ["_count", "_sum", "_stats", "_approx_count_distinct"]

    static func check(_ body: JSONObject) throws {
        guard (body["language"]?.stringValue ?? "javascript") == "javascript" else { return }
        var functions: [(source: String, what: String)] = []
        if let views = body["views"] {
            guard let views = views.objectValue else { throw invalid("`views` field must have object type") }
            for (name, view) in views.members where name != "lib" {
                guard let view = view.objectValue, let map = view["map"]?.stringValue else {
                    throw invalid("View `\(name)` must contain map function")
                }
                functions.append((map, "map function in the '\(name)' view"))
                if let reduce = view["reduce"]?.stringValue {
                    if reduce.hasPrefix("_") {
                        guard builtinReduces.contains(reduce) else { throw invalid("`\(reduce)` is not a supported reduce function.") }
                    } else {
                        functions.append((reduce, "reduce function in the '\(name)' view"))
                    }
                }
            }
        }
        if let filters = body["filters"] {
            guard let filters = filters.objectValue else { throw invalid("`filters` field must have object type") }
            for (name, filter) in filters.members {
                switch filter {
                case .string(let source): functions.append((source, "filter function '\(name)'"))
                case .object: break
                default: throw invalid("`filters.\(name)` field must have string or object type")
                }
            }
        }
        if let nouveau = body["nouveau"] {
            guard let nouveau = nouveau.objectValue else { throw invalid("`nouveau` field must have object type") }
            for (name, index) in nouveau.members {
                guard let source = index.objectValue?["index"]?.stringValue else { throw invalid("Index `\(name)` must contain an index function") }
                functions.append((source, "index function in the '\(name)' nouveau index"))
            }
        }
        guard !functions.isEmpty else { return }
        try JSEnginePool.shared.withEngine(key: "\u{0}design-check", label: "design document check",
                                           setUp: { try $0.evaluate(checker, fileName: "check") }) { engine in
            for f in functions {
                // An expression that loops or exhausts memory while it evaluates can never
                // give a function: a compilation error (400), not the engine's 500.
                let message: String?
                do { message = try engine.call("__cbl_compiles", [.string(f.source)]).stringValue } catch let failure as JSFailure {
                    message = failure.description
                }
                if let message {
                    throw DesignDocumentRefusal.compilation.error("Compilation of the \(f.what) failed: \(message) (\(f.source.prefix(200)))")
                }
            }
        }
    }

    private static func invalid(_ reason: String) -> CBLError { DesignDocumentRefusal.invalid.error(reason) }

    /// Compiles without running (a SyntaxError's text), then evaluates the expression,
    /// which must give a function; null when it does.
    private static let checker = """
        function __cbl_compiles(source) {
          var make;
          try { make = new Function('return (' + source + '\\n);'); } catch (e) { return String(e); }
          try { if (typeof make() === 'function') return null; } catch (e) {}
          return 'Expression does not eval to a function.';
        }
        """
}
