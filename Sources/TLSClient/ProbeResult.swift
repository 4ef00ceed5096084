import ATSPolicy

/// Where a probe connects: the host the certificate is judged for, and the addresses to try.
public struct ProbeTarget: Sendable, Equatable {
    /// A DNS name or an IP literal; sent as SNI when it is a name.
    public var host: String
    public var port: Int
    /// IP literals to try in order; empty means resolve `host`.
    public var addresses: [String]
    /// Through a parent proxy: `addresses` are then the parent's, and the target is asked of it with
    /// CONNECT.
    public var tunnel: ProbeTunnel?

    public init(host: String, port: Int, addresses: [String] = [], tunnel: ProbeTunnel? = nil) {
        self.host = host
        self.port = port
        self.addresses = addresses
        self.tunnel = tunnel
    }
}

/// What a completed handshake negotiated and what the server presented.
public struct NegotiatedSession: Sendable {
    /// "TLSv1.2" and so on.
    public var protocolVersion: String
    public var tlsVersion: TLSVersion?
    /// IANA name, e.g. "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".
    public var cipher: String
    /// The suite's code point (what R14's sets list).
    public var cipherSuite: UInt16?
    /// The ServerHello agreed to the extended master secret (RFC 7627; R18 on TLS 1.2).
    public var extendedMasterSecret: Bool = false
    /// DER, leaf first, as the server sent it.
    public var peerChainDER: [[UInt8]]
    public var certificate: CertificateVerdict
    /// What the handshake rules (R14, or R18 for system connections) found wrong with what was
    /// negotiated; nil when it meets them.
    public var handshakeFailure: RuleFailure?

    /// The facts the handshake rules judge.
    public func handshakeFacts(host: String) -> HandshakeFacts? {
        guard let cipherSuite, let version = tlsVersion else { return nil }
        return HandshakeFacts(version: version.wireValue, cipherSuite: cipherSuite,
                              extendedMasterSecret: extendedMasterSecret, host: host,
                              versionName: protocolVersion, suiteName: cipher)
    }
}

/// Why a probe did not complete a handshake under the requirements.
public struct ProbeFailure: Error, Sendable, CustomStringConvertible {
    /// The stable failure codes: two ATS reasons, and the proxy's upstream codes for the rest.
    public enum Code: String, Sendable {
        /// The server only speaks versions below the minimum (R13).
        case tlsVersion = "tls-version"
        /// No cipher suite the requirements allow is common to both sides (R14).
        case cipherSuite = "cipher-suite"
        /// The handshake failed for another reason (the message has OpenSSL's words).
        case handshake = "tls-handshake"
        case refused = "upstream-refused"
        case timeout = "upstream-timeout"
        case dns = "upstream-dns"
        case unreachable = "upstream-unreachable"
    }

    public var code: Code
    /// Names the host and what went wrong, and for ATS reasons what would change the outcome.
    public var message: String
    /// What a handshake with no restriction negotiated, when one was made to explain the failure; its
    /// certificate is judged under the probe's requirements all the same.
    public var unrestricted: NegotiatedSession?
    /// The rule that decided, for the ATS reasons (R14, or R18 for system connections).
    public var rule: RuleID?

    public init(code: Code, message: String, unrestricted: NegotiatedSession? = nil, rule: RuleID? = nil) {
        self.code = code
        self.message = message
        self.unrestricted = unrestricted
        self.rule = rule
    }

    /// The ATS reason, for `tls-version` and `cipher-suite`.
    public var blockReason: BlockReason? { BlockReason(rawValue: code.rawValue) }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// The outcome of one probe: a session judged by the requirements, or the failure.
public struct ProbeResult: Sendable {
    public var target: ProbeTarget
    public var requirements: Requirements
    /// The address the probe connected to, if it connected.
    public var address: String?
    /// Set when the handshake completed under the requirements.
    public var session: NegotiatedSession?
    /// Set when it did not.
    public var failure: ProbeFailure?

    /// The code that fails the probe: the handshake failure's, else what the handshake rules found in
    /// the negotiated session (R18's extended master secret), else the blocking certificate finding's.
    public var failureReason: String? {
        failure?.code.rawValue ?? session?.handshakeFailure?.reason.rawValue
            ?? session?.certificate.blockingFinding?.reason.rawValue
    }

    public var failureMessage: String? {
        failure?.message ?? session?.handshakeFailure?.message ?? session?.certificate.blockingFinding?.message
    }

    /// The rule that decided a failure (R14, R15, R15a, R16, R17, R18); nil when the probe passed or
    /// failed for a reason no rule names (unreachable, a handshake error).
    public var rule: RuleID? {
        if let failure { return failure.rule }
        return session?.handshakeFailure?.rule ?? session?.certificate.blockingFinding?.rule
    }

    /// The handshake completed and nothing the requirements enforce failed.
    public var passed: Bool { failureReason == nil }
}
