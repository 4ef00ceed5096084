/// R14 as data: which negotiated cipher suites each `CipherPolicy` accepts, by IANA code. The sets are
/// views of `R14CipherSuites`, where each suite is written once.
extension CipherPolicy {
    /// Every TLS 1.3 suite (RFC 8446 appendix B.4); all acceptable when TLS 1.3 is negotiated.
    static let tls13Suites = R14CipherSuites.codes(.tls13)

    /// ATS's forward-secrecy set: ECDHE_ECDSA and ECDHE_RSA with AES-128/256 in GCM or CBC mode, and
    /// the ECDHE ChaCha20-Poly1305 suites.
    static let forwardSecrecySuites = R14CipherSuites.codes(.forwardSecrecy)

    /// TLS_RSA_WITH_AES_{128,256}_{GCM,CBC}_*: RSA key exchange, accepted without forward secrecy.
    static let rsaKeyExchangeSuites = R14CipherSuites.codes(.rsaKeyExchange)

    /// Whether a handshake that negotiated `suite` at protocol `version` (wire values, e.g. 0xC02F and
    /// 0x0303) meets this policy. Under TLS 1.3 only TLS 1.3 suites exist; below it, only the sets above.
    public func allows(suite: UInt16, version: UInt16) -> Bool {
        if self == .any { return true }
        if version >= TLSVersion.tls13.wireValue { return Self.tls13Suites.contains(suite) }
        if Self.forwardSecrecySuites.contains(suite) { return true }
        return self == .forwardSecrecyOrRSA && Self.rsaKeyExchangeSuites.contains(suite)
    }
}

extension Requirements {
    /// R14 for these requirements: the minimum version, then the cipher suite.
    public var handshakeRules: AllRules<HandshakeFacts> {
        AllRules([MinimumVersionRule(minimum: minimumTLSVersion), CipherSuiteRule(policy: cipherPolicy)])
    }

    /// The first way a negotiated handshake breaks these requirements (minimum version, then cipher
    /// suite; both R14), with the sentence to log; nil when it meets them. The names come from the caller
    /// (TLSWire's `TLSProtocolVersion.name(for:)` and `CipherSuite.name(for:)`).
    public func wireViolation(version: UInt16, suite: UInt16, host: String, versionName: String,
                              suiteName: String) -> (reason: BlockReason, message: String)? {
        let facts = HandshakeFacts(version: version, cipherSuite: suite, host: host, versionName: versionName,
                                   suiteName: suiteName)
        guard let failure = handshakeRules.evaluate(facts).failure else { return nil }
        return (failure.reason, failure.message)
    }
}
