import ATSPolicy
import HTTP1
import TLSWire

/// Every reason code a record, a metric or an `X-ATS-Reason` header carries: an ATS decision's (the
/// policy's own `BlockReason`, listed once, in ATSPolicy) or one of the proxy's. One enum, so that no
/// reason is a loose string.
package enum Reason: Hashable, Sendable, CaseIterable {
    /// ATS, the SNI rule and the proxy's access rules.
    case ats(BlockReason)
    // The client's request could not be served as sent.
    case badRequest
    case requestTimeout
    case notAProxyRequest
    case methodNotAllowed
    case loopDetected
    /// A tunnel's client sent nothing, or did not finish its TLS handshake (inside the tunnel, or with
    /// the proxy's TLS listener), in time.
    case clientTimeout
    /// The client's TLS with the proxy (--listen-tls) failed: not TLS, no common version or cipher, or
    /// the client refused the proxy's certificate (the message says which).
    case clientTLS
    case shutdown
    // The name did not resolve: NXDOMAIN (or no address at all, NODATA), no answer in --dns-timeout,
    // or a failing resolver (SERVFAIL, REFUSED, a malformed or truncated answer).
    case dnsNXDomain
    case dnsTimeout
    case dnsFailure
    // The origin failed.
    case upstreamRefused
    case upstreamTimeout
    case upstreamProtocol
    case upstreamTLS
    case upstreamTruncated
    /// The origin refused the client's TLS handshake with a fatal alert (named in the message).
    case serverAlert
    /// The client refused the server: a fatal alert after the server's Certificate, before its own
    /// Finished (its pinning or trust evaluation; `client_alert` names it when it can be seen).
    case clientRefusedCertificate
    /// No --route matched and --unrouted is block.
    case noPolicy
    /// The destination ACL refused the address (--allow-dest, --deny-dest, the default denials).
    case destinationNotAllowed
    /// Too many failed logins from the client's address: 429 with Retry-After.
    case authThrottled
    /// Not a decision: the log's record of the decision records it lost (LogOverflowRecord).
    case logOverflow
    // The parent proxy failed: it refused the CONNECT or request (its status in the message), could
    // not be reached, wanted other credentials, did not answer in time, or answered garbage.
    case parentRefused
    case parentUnreachable
    case parentAuth
    case parentTimeout
    case parentProtocol

    init(_ reason: BlockReason) { self = .ats(reason) }

    private static let proxyReasons: [Reason] = [
        .badRequest, .requestTimeout, .notAProxyRequest, .methodNotAllowed, .loopDetected, .clientTimeout, .clientTLS,
        .shutdown,
        .dnsNXDomain, .dnsTimeout, .dnsFailure,
        .upstreamRefused, .upstreamTimeout, .upstreamProtocol, .upstreamTLS, .upstreamTruncated,
        .serverAlert, .clientRefusedCertificate, .noPolicy, .destinationNotAllowed, .authThrottled, .logOverflow,
        .parentRefused, .parentUnreachable, .parentAuth, .parentTimeout, .parentProtocol,
    ]

    package static let allCases: [Reason] = BlockReason.allCases.map(Reason.ats) + proxyReasons

    private static let byCode = Dictionary(uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })

    init?(rawValue: String) {
        guard let reason = Reason.byCode[rawValue] else { return nil }
        self = reason
    }

    /// The code as logged.
    var rawValue: String {
        switch self {
        case .ats(let reason): reason.rawValue
        case .badRequest: "bad-request"
        case .requestTimeout: "request-timeout"
        case .notAProxyRequest: "not-a-proxy-request"
        case .methodNotAllowed: "method-not-allowed"
        case .loopDetected: "loop-detected"
        case .clientTimeout: "client-timeout"
        case .clientTLS: "client-tls"
        case .shutdown: "shutdown"
        case .dnsNXDomain: "dns-nxdomain"
        case .dnsTimeout: "dns-timeout"
        case .dnsFailure: "dns-failure"
        case .upstreamRefused: "upstream-refused"
        case .upstreamTimeout: "upstream-timeout"
        case .upstreamProtocol: "upstream-protocol"
        case .upstreamTLS: "upstream-tls"
        case .upstreamTruncated: "upstream-truncated"
        case .serverAlert: "server-alert"
        case .clientRefusedCertificate: "client-refused-certificate"
        case .noPolicy: "no-policy"
        case .destinationNotAllowed: "destination-not-allowed"
        case .authThrottled: "auth-throttled"
        case .logOverflow: "log-overflow"
        case .parentRefused: "parent-refused"
        case .parentUnreachable: "parent-unreachable"
        case .parentAuth: "parent-auth"
        case .parentTimeout: "parent-timeout"
        case .parentProtocol: "parent-protocol"
        }
    }

    /// The proxy's own access rules hold in report mode too; only ATS blocks become report-only.
    var enforcedInReportMode: Bool {
        switch self {
        case .ats(.clientNotAllowed), .ats(.portNotAllowed), .ats(.authRequired), .noPolicy, .destinationNotAllowed,
             .authThrottled: true
        default: false
        }
    }

    /// Reasons of a connection to the origin (or a parent) that could not be made.
    var isUpstreamFailure: Bool {
        switch self {
        case .dnsNXDomain, .dnsTimeout, .dnsFailure, .upstreamRefused, .upstreamTimeout, .parentRefused,
             .parentUnreachable, .parentAuth, .parentTimeout, .parentProtocol:
            true
        default:
            false
        }
    }

    /// Reasons of a parent proxy that failed (Proxy-Status names it as the `next-hop`).
    var isParentFailure: Bool {
        switch self {
        case .parentRefused, .parentUnreachable, .parentAuth, .parentTimeout, .parentProtocol: true
        default: false
        }
    }

    /// Reasons of a TLS handshake the proxy refused or could not complete (the `/metrics` family).
    var isHandshakeFailure: Bool {
        switch self {
        case .ats(let reason):
            switch reason {
            case .tlsVersion, .cipherSuite, .sniMismatch, .certificateUntrusted, .certificateExpired,
                 .certificateHostname, .certificateKeySize, .certificateSignatureHash, .certificatePin,
                 .certificateTransparency:
                true
            default:
                false
            }
        case .upstreamTLS, .serverAlert: true
        default: false
        }
    }
}

/// The action a record logs (INTERFACE.md): exactly these four.
package enum RecordAction: String, Sendable {
    case allow
    case block
    case upgrade
    case error
}

/// What the proxy does with a request, decided once and applied in one place
/// (`ProxyConnection.enforce`), the way goproxy's CONNECT handler is one switch.
package enum Verdict {
    /// Proceed: tunnel or forward.
    case allow
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

    /// The HTTP status the client gets when the verdict is answered over HTTP.
    var status: Int {
        switch self {
        case .allow, .upgrade, .serve: 200
        case .block: 403
        case .challenge: 407
        case .throttle: 429
        case .redirect: 308
        case .answer(let status, _, _, _, _), .fail(_, let status, _, _): status
        }
    }

    var action: RecordAction {
        switch self {
        case .allow, .serve: .allow
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

    static let close = Delivery.http(keepAlive: false)
}
