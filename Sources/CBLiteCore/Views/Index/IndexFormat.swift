/// The format a view index records (`view_indexes.format`), so that an index is read only
/// by a build whose keys order the same way. It names the row layout and key encoding
/// (`layout`), then what the index's string sort keys came from:
///
///     ix6/icu-<collator version>   keys may hold ICU sort keys of that collator version
///                                  ("icu-none": the code-point fallback, ICU did not open)
///     ix6/no-collation             no key ever held a string or an object (numbers, null,
///                                  booleans, arrays of these): no collation data was used
///
/// A no-collation index is current whatever ICU there is, and checking it does not open
/// ICU's collator (about 1.8 MiB of ICU's code and data paged in, for views whose keys are
/// numbers). An index starts as no-collation; the transaction that writes its first key
/// needing the collator records the collated format with those rows, and it never goes
/// back. So a fallback-built index that holds strings says "icu-none" and is rebuilt once
/// ICU opens, and a no-collation index never holds a sort key of any collator.
enum IndexFormat {
    /// ix6: a key's last number drops its trailing zero bytes when only end markers follow
    /// it (CollatableKey: `[42]` in 5 bytes); an ix5 index, whose `[42]` has 11, is rebuilt.
    /// ix5 added per-key counts (ViewStorage.countsTable).
    static let layout = "ix6"
    static let withoutCollation = layout + "/no-collation"

    /// The format of an index whose keys hold sort keys of this process's collator; the
    /// first use opens ICU.
    static var collated: String { collatedTag }
    private static let collatedTag = layout + "/icu-" + ICU.shared.collatorVersion

    /// Whether an index of `format` can be read and extended by this build. ICU is opened
    /// only for an index that names it (`||` does not evaluate its right side otherwise).
    static func isCurrent(_ format: String) -> Bool {
        format == withoutCollation || format == collated
    }
}
