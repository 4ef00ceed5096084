/// What the next hop said when it failed, for the parameters RFC 9209 gives its error types: the DNS
/// RCODE of a failed lookup (`dns_error`'s `rcode`) and the status a parent proxy answered
/// (`received-status`). Empty when there is nothing to add.
package struct NextHopAnswer: Sendable, Equatable {
    /// `NXDOMAIN`, `SERVFAIL`, `REFUSED`, or `NOERROR` for a name without an address (NODATA).
    package var rcode: String?
    package var receivedStatus: Int?

    package init(rcode: String? = nil, receivedStatus: Int? = nil) {
        self.rcode = rcode
        self.receivedStatus = receivedStatus
    }

    package static let none = NextHopAnswer()
}
