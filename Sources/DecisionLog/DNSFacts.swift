/// What the lookups of the origin's name said for one request: the record's `dns_ms`, `dns_cached`
/// and `dns_stale` (DecisionRecord.noteDNS).
package struct DNSFacts: Sendable, Equatable {
    /// The longest this request waited for a lookup (a lookup already in flight is shared, the wait is
    /// the request's own); nil when no answer needed one.
    package var waitedMilliseconds: Double?
    /// nil: no answer came; false: at least one needed a lookup; true: none did (an IP literal, a
    /// pinned or cached name).
    package var cached: Bool?
    /// An expired answer was served because the resolver failed (RFC 8767).
    package var stale = false

    package init(waitedMilliseconds: Double? = nil, cached: Bool? = nil, stale: Bool = false) {
        self.waitedMilliseconds = waitedMilliseconds
        self.cached = cached
        self.stale = stale
    }

    /// One answer: `waited` is the request's wait when the resolver was asked, nil when the answer
    /// needed no lookup.
    package mutating func add(waited: Double?, stale: Bool) {
        if let waited {
            waitedMilliseconds = max(waitedMilliseconds ?? 0, waited)
            cached = false
        } else if cached == nil {
            cached = true
        }
        if stale { self.stale = true }
    }
}
