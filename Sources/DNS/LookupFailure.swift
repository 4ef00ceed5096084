/// Why a name gave no address, as the proxy's reasons tell it (`dns-nxdomain`, `dns-timeout`,
/// `dns-failure`), with a message naming the name and what the resolver said.
package struct LookupFailure: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Hashable {
        /// The name does not exist (NXDOMAIN).
        case nxdomain
        /// The name exists without an address of the family asked for (NODATA).
        case noData
        /// No answer before `--dns-timeout` (or c-ares' own retries gave up).
        case timeout
        /// SERVFAIL, REFUSED, a malformed or truncated answer, an unreachable resolver.
        case failure
    }

    package var kind: Kind
    package var message: String
    /// The DNS RCODE when the resolver answered with one (RFC 8499 names: `NXDOMAIN`, `SERVFAIL`,
    /// `REFUSED`; `NOERROR` for NODATA); nil when no answer said (a timeout, a broken answer).
    package var rcode: String?
    package var description: String { message }

    package init(_ kind: Kind, _ message: String, rcode: String? = nil) {
        self.kind = kind
        self.message = message
        switch kind {
        case .nxdomain: self.rcode = rcode ?? "NXDOMAIN"
        case .noData: self.rcode = rcode ?? "NOERROR"
        case .timeout, .failure: self.rcode = rcode
        }
    }

    /// An authoritative "no address" (cached as a negative answer), as opposed to a resolver failure.
    package var isNegative: Bool { kind == .nxdomain || kind == .noData }
}
