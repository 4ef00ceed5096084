import ATSPolicy

/// An answer handed to a connection: one address family's addresses or why there are none, and
/// where the answer came from (the record's `dns_ms`, `dns_cached` and `dns_stale`).
package struct Resolution: Sendable {
    package enum Source: Sendable, Equatable {
        /// The host is an IP address.
        case literal
        /// `--resolve NAME=IP`.
        case pinned
        /// The cache's fresh answer (or remembered NXDOMAIN/NODATA): no lookup.
        case cache
        /// An expired answer served because the refresh failed or was late (RFC 8767): why, and how
        /// long ago it expired.
        case stale(problem: String, expiredSeconds: Double)
        /// The resolver was asked; the lookup took this long (it may have been shared).
        case lookup(milliseconds: Double)
    }

    /// nil: the answer for every family at once (an IP literal, a pinned name).
    package var family: AddressFamily?
    package var result: Result<[IPAddress], LookupFailure>
    package var source: Source

    package init(family: AddressFamily?, result: Result<[IPAddress], LookupFailure>, source: Source) {
        self.family = family
        self.result = result
        self.source = source
    }

    /// The resolver was asked (and the connection waited for it).
    package var lookupMilliseconds: Double? {
        if case .lookup(let milliseconds) = source { return milliseconds }
        return nil
    }

    package var isStale: Bool {
        if case .stale = source { return true }
        return false
    }
}
