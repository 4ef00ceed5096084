import ATSPolicy
import DecisionLog
import HTTP1
import TLSWire

/// What the proxy does with a request, decided once and applied in one place
/// (`ProxyConnection.enforce`), the way goproxy's CONNECT handler is one switch.
package enum Verdict {
    /// Proceed: tunnel or forward.
    case allow
    /// Proceed outside every app's ATS policy, for a reason the record names: the device's own
    /// traffic (`system-fetch`).
    case exempt(Reason, message: String)
    /// Carry a plain request to the origin over TLS (`--cleartext upgrade`).
    case upgrade
    /// Refused by ATS or an access rule. A nil message is the decision's own (formatted lazily); a
    /// TLS-level refusal names its rule (R14-R17), which the record logs instead of the lookup's.
    case block(Reason, message: String?, rule: RuleID? = nil)
    /// A redirect to the https URL (`--cleartext redirect`).
    case redirect(location: String)
    /// No valid proxy credentials (--auth-file): 407 with a Basic challenge, reason `auth-required`.
    case challenge(message: String)
    /// Too many failed logins from the client's address: 429 with Retry-After, reason `auth-throttled`.
    case throttle(message: String, retryAfter: Int)
    /// A document the proxy serves itself (the PAC file): 200; for a HEAD, the head alone.
    case serve(contentType: String, body: String, includeBody: Bool)
    /// The proxy's own answer to a request it cannot serve (400, 405, 408, 413, 414, 431, 505, 508).
    case answer(status: Int, Reason, message: String, headers: [(String, String)] = [], body: String? = nil)
    /// The origin failed (502 or 504); `answer` is what its resolver or a parent said (Proxy-Status).
    case fail(Reason, status: Int, message: String, answer: NextHopAnswer = .none)
    /// Proceed, with a finding the record names as its reason (action `allow`): the transparent gate's
    /// `--sni-check report` and `--transparent-other allow`.
    case note(Reason, message: String)

    /// The HTTP status the client gets when the verdict is answered over HTTP.
    package var status: Int {
        switch self {
        case .allow, .exempt, .upgrade, .serve, .note: 200
        case .block: 403
        case .challenge: 407
        case .throttle: 429
        case .redirect: 308
        case .answer(let status, _, _, _, _), .fail(_, let status, _, _): status
        }
    }

    package var action: RecordAction {
        switch self {
        case .allow, .exempt, .serve, .note: .allow
        case .block, .challenge, .throttle: .block
        case .upgrade, .redirect: .upgrade
        case .answer, .fail: .error
        }
    }
}

/// How a verdict reaches the client: an HTTP answer (after which a kept-alive client's next request
/// is read), a TLS fatal alert in a watched handshake, or (mid-relay, where the stream is encrypted,
/// or mid-response) a cut.
package enum Delivery {
    case http(keepAlive: Bool)
    /// The TLS upgrade of this request (only with `Verdict.upgrade`).
    case upgrade(RequestHead, Destination, Decision)
    case alert(AlertDescription, recordVersion: UInt16)
    case cut

    package static let close = Delivery.http(keepAlive: false)
}
