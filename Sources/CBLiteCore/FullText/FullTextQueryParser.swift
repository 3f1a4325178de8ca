/// Reads FullTextQuery's syntax (see there) by recursive descent over the text's Unicode
/// scalars, so that each error names the position where the query went wrong.
///
/// With `lucene` (CouchDB's `$text` and Nouveau queries) Lucene's other syntax is read
/// too, each construct either done as Lucene does it or refused with its position —
/// never dropped: `"a b"~N` (phrase slop: FTS5's NEAR, in any order), `field:[a TO b]`
/// and `{a TO b}` (bounds in or out, `*` open) on value fields, `field:2001` on a number
/// field; refused: fuzzy terms (`term~`), boosts (`^`), `?` and `*` inside a term,
/// leading wildcards.
struct FullTextQueryParser {
    /// The value fields of Lucene's syntax: compared as numbers or as whole strings.
    struct Lucene {
        var numbers: [String]
        var strings: [String]
    }

    private let s: [Unicode.Scalar]
    private let fields: [String]
    private let lucene: Lucene?
    private var pos = 0

    init(_ text: String, fields: [String]) {
        self.init(text, fields: fields, lucene: nil)
    }

    init(_ text: String, fields: [String], lucene: Lucene?) {
        s = Array(text.unicodeScalars)
        self.fields = fields
        self.lucene = lucene
    }

    mutating func parse() throws -> FullTextQuery {
        skipSpace()
        guard pos < s.count else { throw FullTextQueryError("the query is empty", at: 0) }
        let q = try orExpr()
        skipSpace()
        if pos < s.count {
            throw FullTextQueryError(s[pos] == ")" ? "unbalanced ')'" : "unexpected '\(s[pos])'", at: pos)
        }
        return q
    }

    // MARK: lexing

    private static func isSpace(_ c: Unicode.Scalar) -> Bool { c.properties.isWhitespace }
    /// Characters that end a bare word (Lucene's syntax has more).
    private func isDelimiter(_ c: Unicode.Scalar) -> Bool {
        FullTextQueryParser.isSpace(c) || "()\":*,".unicodeScalars.contains(c)
            || (lucene != nil && "~^[]{}".unicodeScalars.contains(c))
    }

    private mutating func skipSpace() { while pos < s.count && FullTextQueryParser.isSpace(s[pos]) { pos += 1 } }

    /// The bare word at the position (nil when there is none), not consumed; a word
    /// includes a field name's dots and backslash escapes.
    private func peekWord() -> (text: String, end: Int)? {
        var i = pos, out = ""
        while i < s.count && !isDelimiter(s[i]) {
            if s[i] == "\\" && i + 1 < s.count { out.unicodeScalars.append(s[i]); i += 1 }
            out.unicodeScalars.append(s[i])
            i += 1
        }
        return i > pos ? (out, i) : nil
    }

    /// The operator keyword at the position (upper-case, followed by a delimiter), if any.
    private func peekOperator() -> String? {
        guard let (w, end) = peekWord() else { return nil }
        if ["AND", "OR", "NOT"].contains(w) { return w }
        if w == "NEAR" || (w.hasPrefix("NEAR/") && w.count > 5) {
            // NEAR( is FTS5's function form, a primary, not the infix operator.
            return end < s.count && s[end] == "(" ? nil : w
        }
        _ = end
        return nil
    }

    private var atEndOfOperand: Bool {
        pos >= s.count || s[pos] == ")" || peekOperator() != nil
    }

    // MARK: grammar

    private mutating func orExpr() throws -> FullTextQuery {
        var xs = [try andExpr()]
        while true {
            skipSpace()
            guard peekOperator() == "OR" else { break }
            let at = pos
            pos = peekWord()!.end
            skipSpace()
            if atEndOfOperand { throw FullTextQueryError("OR needs a term after it", at: at) }
            xs.append(try andExpr())
        }
        return xs.count == 1 ? xs[0] : .or(xs)
    }

    /// Terms joined by AND or side by side; Lucene's -x are excluded from the rest.
    private mutating func andExpr() throws -> FullTextQuery {
        var include: [FullTextQuery] = [], exclude: [FullTextQuery] = []
        let start = pos
        while true {
            skipSpace()
            if pos >= s.count || s[pos] == ")" { break }
            if let op = peekOperator() {
                if op == "OR" {
                    if include.isEmpty && exclude.isEmpty { throw FullTextQueryError("OR needs a term before it", at: pos) }
                    break
                }
                if op == "AND" {
                    let at = pos
                    if include.isEmpty && exclude.isEmpty { throw FullTextQueryError("AND needs a term before it", at: at) }
                    pos = peekWord()!.end
                    skipSpace()
                    if atEndOfOperand { throw FullTextQueryError("AND needs a term after it", at: at) }
                    continue
                }
                throw FullTextQueryError("\(op.hasPrefix("NEAR") ? "NEAR" : op) needs a term before it", at: pos)
            }
            var negative = false
            if s[pos] == "-" || s[pos] == "+" {
                negative = s[pos] == "-"
                pos += 1
                if pos >= s.count || FullTextQueryParser.isSpace(s[pos]) {
                    throw FullTextQueryError("'\(negative ? "-" : "+")' needs a term right after it", at: pos - 1)
                }
            }
            let x = try notExpr()
            if negative { exclude.append(x) } else { include.append(x) }
        }
        if include.isEmpty {
            if exclude.isEmpty { throw FullTextQueryError(pos < s.count ? "empty group" : "a term is missing", at: pos) }
            throw FullTextQueryError("a query cannot only exclude terms", at: start)
        }
        var q = include.count == 1 ? include[0] : .and(include)
        for e in exclude { q = .not(q, e) }
        return q
    }

    private mutating func notExpr() throws -> FullTextQuery {
        var q = try nearExpr()
        while true {
            skipSpace()
            guard peekOperator() == "NOT" else { break }
            let at = pos
            pos = peekWord()!.end
            skipSpace()
            if atEndOfOperand { throw FullTextQueryError("NOT needs a term after it", at: at) }
            q = .not(q, try nearExpr())
        }
        return q
    }

    /// a NEAR b NEAR/3 c: one NEAR group, the smallest distance given.
    private mutating func nearExpr() throws -> FullTextQuery {
        let first = try unary()
        var xs = [first]
        var distance: Int? = nil
        while true {
            skipSpace()
            guard let op = peekOperator(), op.hasPrefix("NEAR") else { break }
            let at = pos
            if op != "NEAR" {
                guard let n = Int(op.dropFirst(5)), n >= 0 else { throw FullTextQueryError("NEAR/ needs a distance (a whole number)", at: at) }
                distance = min(distance ?? n, n)
            }
            pos = peekWord()!.end
            skipSpace()
            if atEndOfOperand { throw FullTextQueryError("NEAR needs a term after it", at: at) }
            let operandAt = pos
            let x = try unary()
            xs.append(x)
            for y in [x] where !y.isNearOperand { throw FullTextQueryError("NEAR joins terms and phrases only", at: operandAt) }
        }
        if xs.count == 1 { return first }
        if !first.isNearOperand { throw FullTextQueryError("NEAR joins terms and phrases only", at: pos) }
        return .near(xs, distance: distance ?? FullTextQuery.defaultNearDistance)
    }

    /// [field:] primary
    private mutating func unary() throws -> FullTextQuery {
        skipSpace()
        if let (w, end) = peekWord(), end < s.count, s[end] == ":" {
            let at = pos
            let name = w
            let known = fields + (lucene.map { $0.numbers + $0.strings.filter { !fields.contains($0) } } ?? [])
            guard known.contains(name) else {
                throw FullTextQueryError("unknown field '\(name)' (the index has \(known.joined(separator: ", ")))", at: at)
            }
            pos = end + 1
            if pos >= s.count || FullTextQueryParser.isSpace(s[pos]) {
                throw FullTextQueryError("'\(name):' needs a term right after it", at: pos - 1)
            }
            if let lucene, s[pos] == "[" || s[pos] == "{" { return try range(name, lucene) }
            if let lucene, lucene.numbers.contains(name) { return try number(name) }
            if lucene != nil, !fields.contains(name) { return try stringValue(name) }
            let x = try primary()
            if case .field = x { throw FullTextQueryError("a field-scoped term cannot be scoped again", at: at) }
            return .field(name, x)
        }
        return try primary()
    }

    private mutating func primary() throws -> FullTextQuery {
        skipSpace()
        guard pos < s.count else { throw FullTextQueryError("a term is missing", at: pos) }
        let c = s[pos]
        switch c {
        case "(":
            let open = pos
            pos += 1
            skipSpace()
            if pos < s.count && s[pos] == ")" { throw FullTextQueryError("empty group", at: open) }
            let q = try orExpr()
            skipSpace()
            guard pos < s.count && s[pos] == ")" else { throw FullTextQueryError("unbalanced '('", at: open) }
            pos += 1
            return q
        case "\"":
            let open = pos
            let text = try quoted()
            if text.unicodeScalars.allSatisfy(FullTextQueryParser.isSpace) { throw FullTextQueryError("empty phrase", at: open) }
            if lucene != nil, pos < s.count, s[pos] == "~" { return try slop(text) }
            return try luceneSuffix(.phrase(text, prefix: takeStar()))
        case ")": throw FullTextQueryError("a term is missing before ')'", at: pos)
        case "*" where lucene != nil: throw FullTextQueryError("leading wildcards (*term) are not supported", at: pos)
        // Lucene's delimiters (isDelimiter); in the engine's syntax they are word characters.
        case "[" where lucene != nil, "{" where lucene != nil:
            throw FullTextQueryError("a range needs a field (field:[a TO b])", at: pos)
        case "~" where lucene != nil, "^" where lucene != nil, "]" where lucene != nil, "}" where lucene != nil:
            throw FullTextQueryError("unexpected '\(c)'", at: pos)
        case "*", ":", ",": throw FullTextQueryError("unexpected '\(c)'", at: pos)
        default:
            let (w, end) = peekWord()!
            if w == "NEAR" && end < s.count && s[end] == "(" { return try nearFunction() }
            if ["AND", "OR", "NOT", "NEAR"].contains(w) { throw FullTextQueryError("\(w) needs a term before it", at: pos) }
            if lucene != nil, let q = w.unicodeScalars.firstIndex(of: "?") {
                throw FullTextQueryError("single-character wildcards (?) are not supported", at: pos + w.unicodeScalars.distance(from: w.unicodeScalars.startIndex, to: q))
            }
            pos = end
            if lucene != nil, pos < s.count, s[pos] == "~" {
                throw FullTextQueryError("fuzzy searches (term~) are not supported", at: pos)
            }
            return try luceneSuffix(.phrase(w, prefix: takeStar()))
        }
    }

    // MARK: Lucene's syntax

    /// After a term, phrase or group: Lucene's boost (`^`) is refused (FTS5 weighs columns,
    /// not terms), as is a wildcard that goes on into the term (`co*ee`).
    private mutating func luceneSuffix(_ q: FullTextQuery) throws -> FullTextQuery {
        guard lucene != nil, pos < s.count else { return q }
        if s[pos] == "^" { throw FullTextQueryError("boosts (^) are not supported", at: pos) }
        if s[pos] == "~" { throw FullTextQueryError("'~' goes after a phrase (\"a b\"~2)", at: pos) }
        if case .phrase(_, true) = q, !isDelimiter(s[pos]) || s[pos] == "*" {
            throw FullTextQueryError("wildcards inside a term are not supported (only a final *)", at: pos - 1)
        }
        return q
    }

    /// `"a b"~N`: the phrase's words within N words of each other (FTS5's NEAR, which
    /// does not keep their order as Lucene's slop does).
    private mutating func slop(_ text: String) throws -> FullTextQuery {
        let at = pos
        pos += 1
        var digits = ""
        while pos < s.count, let v = s[pos].properties.numericType, v == .decimal { digits.unicodeScalars.append(s[pos]); pos += 1 }
        guard let n = Int(digits) else { throw FullTextQueryError("'~' after a phrase needs a distance (a whole number)", at: at) }
        let words = text.split(whereSeparator: { $0.isWhitespace }).map { FullTextQuery.phrase(String($0), prefix: false) }
        return try luceneSuffix(words.count < 2 ? .phrase(text, prefix: false) : .near(words, distance: n))
    }

    /// `field:2001` on a number field.
    private mutating func number(_ name: String) throws -> FullTextQuery {
        let at = pos
        guard let (w, end) = peekWord(), let d = Double(w) else {
            throw FullTextQueryError("'\(name)' is a number field: it takes a number or a range", at: at)
        }
        pos = end
        return try luceneSuffix(.value(name, .number(d)))
    }

    /// `field:value` or `field:"value"` on a string field that is not a text column: its
    /// whole value.
    private mutating func stringValue(_ name: String) throws -> FullTextQuery {
        let at = pos
        if s[pos] == "\"" { return try luceneSuffix(.value(name, .string(try quoted()))) }
        guard let (w, end) = peekWord() else { throw FullTextQueryError("'\(name):' needs a value", at: at) }
        pos = end
        return try luceneSuffix(.value(name, .string(w)))
    }

    /// `field:[a TO b]`, `field:{a TO b}` (and mixed), `*` for an open end: on a number
    /// field the ends are numbers, on a string field strings (a bare word or a phrase).
    private mutating func range(_ name: String, _ lucene: Lucene) throws -> FullTextQuery {
        let open = pos
        let numeric = lucene.numbers.contains(name)
        guard numeric || lucene.strings.contains(name) else {
            throw FullTextQueryError("ranges need a number or string field ('\(name)' is a text field)", at: open)
        }
        let lowerIn = s[pos] == "["
        pos += 1
        func end() throws -> FullTextValue? {
            skipSpace()
            let at = pos
            guard pos < s.count else { throw FullTextQueryError("unterminated range", at: open) }
            var text: String
            if s[pos] == "\"" {
                text = try quoted()
            } else if s[pos] == "*" {
                pos += 1
                return nil
            } else {
                guard let (w, e) = peekWord() else { throw FullTextQueryError("a range needs a value here", at: at) }
                text = w
                pos = e
            }
            if numeric {
                guard let d = Double(text) else { throw FullTextQueryError("'\(name)' is a number field: the range needs numbers", at: at) }
                return .number(d)
            }
            return .string(text)
        }
        let lower = try end()
        skipSpace()
        guard let (to, toEnd) = peekWord(), to == "TO" else { throw FullTextQueryError("a range needs TO between its ends", at: pos) }
        pos = toEnd
        let upper = try end()
        skipSpace()
        guard pos < s.count, s[pos] == "]" || s[pos] == "}" else { throw FullTextQueryError("unterminated range", at: open) }
        let upperIn = s[pos] == "]"
        pos += 1
        return try luceneSuffix(.range(name, lower: lower.map { FullTextBound($0, inclusive: lowerIn) },
                                       upper: upper.map { FullTextBound($0, inclusive: upperIn) }))
    }

    /// The text of the quoted string at the position (`""` inside: a quote), consumed.
    private mutating func quoted() throws -> String {
        let open = pos
        pos += 1
        var text = ""
        while true {
            guard pos < s.count else { throw FullTextQueryError("unterminated phrase", at: open) }
            if s[pos] == "\"" {
                if pos + 1 < s.count && s[pos + 1] == "\"" { text.unicodeScalars.append("\""); pos += 2; continue }
                pos += 1
                return text
            }
            text.unicodeScalars.append(s[pos])
            pos += 1
        }
    }

    /// A '*' right after a term or phrase: a prefix.
    private mutating func takeStar() -> Bool {
        guard pos < s.count && s[pos] == "*" else { return false }
        pos += 1
        return true
    }

    /// NEAR(a "b c" d, 5)
    private mutating func nearFunction() throws -> FullTextQuery {
        let at = pos
        pos += 5                                   // NEAR(
        var xs: [FullTextQuery] = []
        var distance = FullTextQuery.defaultNearDistance
        while true {
            skipSpace()
            guard pos < s.count else { throw FullTextQueryError("unbalanced '('", at: at + 4) }
            if s[pos] == ")" { pos += 1; break }
            if s[pos] == "," {
                pos += 1
                skipSpace()
                let numAt = pos
                var digits = ""
                while pos < s.count, let v = s[pos].properties.numericType, v == .decimal { digits.unicodeScalars.append(s[pos]); pos += 1 }
                guard let n = Int(digits) else { throw FullTextQueryError("NEAR needs a distance (a whole number) after ','", at: numAt) }
                distance = n
                skipSpace()
                guard pos < s.count && s[pos] == ")" else { throw FullTextQueryError("expected ')' to close NEAR(", at: pos) }
                pos += 1
                break
            }
            let operandAt = pos
            let x = try primary()
            guard x.isNearOperand else { throw FullTextQueryError("NEAR joins terms and phrases only", at: operandAt) }
            xs.append(x)
        }
        guard xs.count >= 2 else { throw FullTextQueryError("NEAR needs at least two terms", at: at) }
        return .near(xs, distance: distance)
    }
}

extension FullTextQuery {
    /// Terms and phrases (FTS5's NEAR takes nothing else).
    var isNearOperand: Bool {
        if case .phrase = self { return true }
        return false
    }
}
