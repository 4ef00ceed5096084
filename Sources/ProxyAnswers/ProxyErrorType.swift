import ATSPolicy
import DecisionLog

/// The Proxy Error Types of RFC 9209 (section 2.3) that atsgate sends in `Proxy-Status`'s `error`
/// parameter, by their registered names.
package enum ProxyErrorType: String, Sendable, CaseIterable {
    case dnsTimeout = "dns_timeout"
    case dnsError = "dns_error"
    case destinationUnavailable = "destination_unavailable"
    case destinationIPProhibited = "destination_ip_prohibited"
    case connectionRefused = "connection_refused"
    case connectionTimeout = "connection_timeout"
    case tlsProtocolError = "tls_protocol_error"
    case tlsCertificateError = "tls_certificate_error"
    case tlsAlertReceived = "tls_alert_received"
    case httpRequestError = "http_request_error"
    case httpRequestDenied = "http_request_denied"
    case httpResponseIncomplete = "http_response_incomplete"
    case httpProtocolError = "http_protocol_error"
    case proxyInternalResponse = "proxy_internal_response"
    case proxyInternalError = "proxy_internal_error"
    case proxyConfigurationError = "proxy_configuration_error"
    case proxyLoopDetected = "proxy_loop_detected"
}

extension Reason {
    /// The RFC 9209 error type that says most about this reason (README's "Proxy-Status" table lists
    /// them all). No `default`: a new reason does not compile until it has one.
    ///
    /// The RFC's types describe the next hop; where atsgate refuses by its own policy (ATS, the
    /// access rules) the type is `http_request_denied`, and where the client's request is at fault it
    /// is `http_request_error` ("a client (4xx) response on the origin's behalf", the RFC's example
    /// for a proxy's 429 too). Reasons only ever recorded, never answered over HTTP (a cut tunnel, a
    /// refused handshake), still get the type they would carry.
    package var proxyErrorType: ProxyErrorType {
        switch self {
        case .ats(let reason):
            switch reason {
            case .cleartextHTTP, .cleartextInTunnel, .sniMismatch, .clientNotAllowed, .portNotAllowed, .authRequired:
                .httpRequestDenied
            case .tlsVersion, .cipherSuite, .extendedMasterSecret:
                .tlsProtocolError
            case .certificateUntrusted, .certificateExpired, .certificateHostname, .certificateKeySize,
                 .certificateSignatureHash, .certificateLifetime, .certificateUsage, .certificatePin,
                 .certificateTransparency, .certificateDistrusted:
                .tlsCertificateError
            }
        case .badRequest, .requestTimeout, .notAProxyRequest, .methodNotAllowed, .clientTimeout, .clientTLS,
             .authThrottled:
            .httpRequestError
        case .loopDetected: .proxyLoopDetected
        case .shutdown, .logOverflow: .proxyInternalError
        case .dnsNXDomain, .dnsFailure: .dnsError
        case .dnsTimeout: .dnsTimeout
        case .upstreamRefused: .connectionRefused
        case .upstreamTimeout, .parentTimeout: .connectionTimeout
        case .upstreamProtocol, .parentProtocol: .httpProtocolError
        case .upstreamTLS: .tlsProtocolError
        case .upstreamTruncated: .httpResponseIncomplete
        case .serverAlert: .tlsAlertReceived
        // The client's own refusal of the server's certificate (never an HTTP answer: the client
        // ended the tunnel's handshake).
        case .clientRefusedCertificate: .tlsCertificateError
        case .noPolicy: .httpRequestDenied
        case .destinationNotAllowed: .destinationIPProhibited
        // The parent (the next hop) refused the CONNECT or request: its status goes in received-status.
        case .parentRefused: .connectionRefused
        // Every parent failed or is passed over after failing: the RFC's "next hop unavailable".
        case .parentUnreachable: .destinationUnavailable
        // The parent wants other credentials than --parent gives: the proxy's configuration is wrong.
        case .parentAuth: .proxyConfigurationError
        // Never sent: a system fetch is forwarded and the origin's response passes as it came. The
        // type the proxy's other allowed answers carry.
        case .systemFetch, .systemTraffic: .proxyInternalResponse
        // The transparent gate's refusals: its own rules about what may pass, never a next hop's.
        case .quicFallback, .otherProtocol, .sniMismatchAddress: .httpRequestDenied
        case .transparentLoop: .proxyLoopDetected
        }
    }
}
