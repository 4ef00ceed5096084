import ATSPolicy

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
    /// Not the app's: the device's own certificate fetch (trustd's caIssuers, OCSP or CRL request),
    /// forwarded outside any app's ATS policy (action `allow`, app `system`).
    case systemFetch
    /// Not the app's: the device's own traffic other than a certificate fetch (push notifications,
    /// iCloud, software update, captive-portal detection...), by the system-destinations table or a
    /// captive probe's User-Agent; forwarded outside any app's ATS policy (action `allow`, app `system`).
    case systemTraffic
    // The transparent gate (--listen-transparent, --listen-tproxy, --listen-quic).
    /// A QUIC attempt read, recorded and dropped, so that the client falls back to TCP.
    case quicFallback
    /// A transparent connection whose first bytes are neither a TLS ClientHello nor HTTP/1.x.
    case otherProtocol
    /// A transparent connection whose original destination is the proxy itself, or that no
    /// firewall redirected: never relayed.
    case transparentLoop
    /// The ClientHello's server name does not resolve to the connection's original destination.
    case sniMismatchAddress

    package init(_ reason: BlockReason) { self = .ats(reason) }

    private static let proxyReasons: [Reason] = [
        .badRequest, .requestTimeout, .notAProxyRequest, .methodNotAllowed, .loopDetected, .clientTimeout, .clientTLS,
        .shutdown,
        .dnsNXDomain, .dnsTimeout, .dnsFailure,
        .upstreamRefused, .upstreamTimeout, .upstreamProtocol, .upstreamTLS, .upstreamTruncated,
        .serverAlert, .clientRefusedCertificate, .noPolicy, .destinationNotAllowed, .authThrottled, .logOverflow,
        .parentRefused, .parentUnreachable, .parentAuth, .parentTimeout, .parentProtocol, .systemFetch, .systemTraffic,
        .quicFallback, .otherProtocol, .transparentLoop, .sniMismatchAddress,
    ]

    package static let allCases: [Reason] = BlockReason.allCases.map(Reason.ats) + proxyReasons

    private static let byCode = Dictionary(uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })

    package init?(rawValue: String) {
        guard let reason = Reason.byCode[rawValue] else { return nil }
        self = reason
    }

    /// The code as logged.
    package var rawValue: String {
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
        case .systemFetch: "system-fetch"
        case .systemTraffic: "system-traffic"
        case .quicFallback: "quic-fallback"
        case .otherProtocol: "other-protocol"
        case .transparentLoop: "transparent-loop"
        case .sniMismatchAddress: "sni-mismatch-address"
        }
    }

    /// An ATS decision, which an ATS rule (R1-R18) decided; not the proxy's own rules and failures.
    package var isATSRule: Bool {
        if case .ats(let reason) = self { !reason.isProxyRule } else { false }
    }

    /// The proxy's own access rules hold in report mode too; only ATS blocks become report-only. So do
    /// the gate's: a QUIC attempt is never answered, a loop never relayed, and another protocol is
    /// the operator's rule (`--transparent-other`), not ATS's.
    package var enforcedInReportMode: Bool {
        switch self {
        case .ats(.clientNotAllowed), .ats(.portNotAllowed), .ats(.authRequired), .noPolicy, .destinationNotAllowed,
             .authThrottled, .quicFallback, .otherProtocol, .transparentLoop: true
        default: false
        }
    }

    /// Reasons of a connection to the origin (or a parent) that could not be made.
    package var isUpstreamFailure: Bool {
        switch self {
        case .dnsNXDomain, .dnsTimeout, .dnsFailure, .upstreamRefused, .upstreamTimeout, .parentRefused,
             .parentUnreachable, .parentAuth, .parentTimeout, .parentProtocol:
            true
        default:
            false
        }
    }

    /// A failure of the origin or of the way to it (the action `error`), not a refusal: the upstream
    /// failures, and a TLS handshake with the origin that could not be made or judged.
    package var isFailure: Bool { isUpstreamFailure || self == .upstreamTLS || self == .upstreamTruncated }

    /// Reasons of a parent proxy that failed (Proxy-Status names it as the `next-hop`).
    package var isParentFailure: Bool {
        switch self {
        case .parentRefused, .parentUnreachable, .parentAuth, .parentTimeout, .parentProtocol: true
        default: false
        }
    }

    /// Reasons of a TLS handshake the proxy refused or could not complete (the `/metrics` family).
    package var isHandshakeFailure: Bool {
        switch self {
        case .ats(let reason):
            switch reason {
            case .tlsVersion, .cipherSuite, .sniMismatch, .certificateUntrusted, .certificateExpired,
                 .certificateHostname, .certificateKeySize, .certificateSignatureHash, .certificatePin,
                 .certificateTransparency, .certificateDistrusted:
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
