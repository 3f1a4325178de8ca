import Glibc

/// Times as CouchDB writes them: HTTP's IMF-fixdate ("Sat, 28 Nov 2026 15:36:44 GMT", in
/// a replication's `history`) and ISO 8601 UTC ("2026-11-28T15:37:02Z", in `_scheduler`).
public enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static func utc(_ unixSeconds: Int64) -> tm {
        var t = time_t(unixSeconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        return parts
    }

    private static func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }

    public static func imfFixdate(_ unixSeconds: Int64) -> String {
        let t = utc(unixSeconds)
        return "\(days[Int(t.tm_wday)]), \(two(t.tm_mday)) \(months[Int(t.tm_mon)]) \(t.tm_year + 1900) "
            + "\(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec)) GMT"
    }

    public static func iso8601(_ unixSeconds: Int64) -> String {
        let t = utc(unixSeconds)
        return "\(t.tm_year + 1900)-\(two(t.tm_mon + 1))-\(two(t.tm_mday))T\(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec))Z"
    }
}
