import ATSPolicy
import DecisionLog
import HTTP1

/// The `Proxy-Status` field (RFC 9209) of an answer the proxy makes itself, so that a client (a UI
/// test) can tell from the response alone that atsgate answered and why: the error type of the
/// reason, `details` with the reason and, for an ATS reason, the rule that decided
/// (`details="cleartext-http R10"`), and what the next hop said (`rcode`, `received-status`, and
/// `next-hop` naming the parent proxy that failed).
package struct ProxyStatus: Equatable {
    package var error: ProxyErrorType?
    package var details: String?
    package var nextHop: String?
    package var receivedStatus: Int?
    package var rcode: String?

    /// A member with no parameters: the CONNECT 200, which says only who answered.
    package static let bare = ProxyStatus()

    package init(error: ProxyErrorType? = nil, details: String? = nil, nextHop: String? = nil, receivedStatus: Int? = nil,
         rcode: String? = nil) {
        self.error = error
        self.details = details
        self.nextHop = nextHop
        self.receivedStatus = receivedStatus
        self.rcode = rcode
    }

    /// The field for `verdict`'s answer, with what `record` knows: the rule that decided and the parent.
    package init(_ verdict: Verdict, record: DecisionRecord) {
        switch verdict {
        case .allow, .exempt, .upgrade, .note:
            self.init()
        case .serve:
            // The PAC file: the RFC's type for a response made without asking any next hop.
            self.init(error: .proxyInternalResponse)
        case .redirect:
            // The http:// request was not forwarded: ATS does not allow it (the decision's rule);
            // the 308 points at the load it does allow. Its record's action is `upgrade`, with no
            // reason (a reason names a refusal), and so are these details.
            self.init(error: .httpRequestDenied, details: ["upgrade", record.loggedRule].compactMap { $0 }.joined(separator: " "))
        case .challenge:
            self.init(reason: .ats(.authRequired), record: record)
        case .throttle:
            self.init(reason: .authThrottled, record: record)
        case .block(let reason, _, _), .answer(_, let reason, _, _, _):
            self.init(reason: reason, record: record)
        case .fail(let reason, _, _, let answer):
            self.init(reason: reason, record: record)
            rcode = answer.rcode
            receivedStatus = answer.receivedStatus
        }
    }

    private init(reason: Reason, record: DecisionRecord) {
        self.init(error: reason.proxyErrorType, details: Self.details(reason, rule: record.loggedRule))
        if reason.isParentFailure { nextHop = record.parent }
    }

    /// `cleartext-http R10`: the reason, and the rule for an ATS reason (the proxy's own reasons and
    /// access rules have none of their own; the decision's rule would only say why the destination
    /// was allowed).
    package static func details(_ reason: Reason, rule: String?) -> String {
        guard case .ats(let blocked) = reason, !blocked.isProxyRule, let rule else { return reason.rawValue }
        return reason.rawValue + " " + rule
    }

    /// The field's value for a proxy named `name`: one list member with its parameters.
    package func value(name: ProxyName) -> String {
        var text = name.member
        if let error { text += "; error=" + error.rawValue }
        if let nextHop { text += "; next-hop=" + StructuredField.tokenOrString(nextHop) }
        if let receivedStatus { text += "; received-status=\(receivedStatus)" }
        if let rcode { text += "; rcode=" + StructuredField.string(rcode) }
        if let details { text += "; details=" + StructuredField.string(details) }
        return text
    }
}
