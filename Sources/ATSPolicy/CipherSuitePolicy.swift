/// R14 as data: which negotiated cipher suites each `CipherPolicy` accepts, by IANA code.
extension CipherPolicy {
    /// Every TLS 1.3 suite (RFC 8446 appendix B.4); all acceptable when TLS 1.3 is negotiated.
    static let tls13Suites: Set<UInt16> = [
        0x1301, // TLS_AES_128_GCM_SHA256
        0x1302, // TLS_AES_256_GCM_SHA384
        0x1303, // TLS_CHACHA20_POLY1305_SHA256
        0x1304, // TLS_AES_128_CCM_SHA256
        0x1305, // TLS_AES_128_CCM_8_SHA256
    ]

    /// ATS's forward-secrecy set: ECDHE_ECDSA and ECDHE_RSA with AES-128/256 in GCM or CBC mode, and
    /// the ECDHE ChaCha20-Poly1305 suites.
    static let forwardSecrecySuites: Set<UInt16> = [
        0xC02C, // TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
        0xC02B, // TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        0xC024, // TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384
        0xC023, // TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256
        0xC00A, // TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA
        0xC009, // TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA
        0xC030, // TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
        0xC02F, // TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        0xC028, // TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384
        0xC027, // TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256
        0xC014, // TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA
        0xC013, // TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA
        0xCCA9, // TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
        0xCCA8, // TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
    ]

    /// TLS_RSA_WITH_AES_{128,256}_{GCM,CBC}_*: RSA key exchange, accepted without forward secrecy.
    static let rsaKeyExchangeSuites: Set<UInt16> = [
        0x009D, // TLS_RSA_WITH_AES_256_GCM_SHA384
        0x009C, // TLS_RSA_WITH_AES_128_GCM_SHA256
        0x003D, // TLS_RSA_WITH_AES_256_CBC_SHA256
        0x003C, // TLS_RSA_WITH_AES_128_CBC_SHA256
        0x0035, // TLS_RSA_WITH_AES_256_CBC_SHA
        0x002F, // TLS_RSA_WITH_AES_128_CBC_SHA
    ]

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
    /// The first way a negotiated handshake breaks these requirements (R13 minimum version, then R14
    /// cipher suite), with the sentence to log; nil when it meets them. The names come from the caller
    /// (TLSWire's `TLSProtocolVersion.name(for:)` and `CipherSuite.name(for:)`), which keeps the one
    /// table of suite names out of this module.
    public func wireViolation(version: UInt16, suite: UInt16, host: String, versionName: String,
                              suiteName: String) -> (reason: BlockReason, message: String)? {
        if let minimum = minimumTLSVersion, version < minimum.wireValue {
            var message = "server negotiated \(versionName); \(host) requires \(minimum.rawValue) or later"
            if let negotiated = TLSVersion.allCases.first(where: { $0.wireValue == version }) {
                message += " (NSExceptionMinimumTLSVersion=\(negotiated.rawValue) would allow it)"
            } else {
                message += " (no ATS key allows \(versionName))"
            }
            return (.tlsVersion, message)
        }
        let policy = cipherPolicy
        guard !policy.allows(suite: suite, version: version) else { return nil }
        let negotiated = "server negotiated \(suiteName) with \(versionName)"
        if version >= TLSVersion.tls13.wireValue {
            return (.cipherSuite, "\(negotiated), which is not a TLS 1.3 cipher suite")
        }
        let message: String
        switch policy {
        case .forwardSecrecy where CipherPolicy.rsaKeyExchangeSuites.contains(suite):
            message = "\(negotiated), which lacks forward secrecy; \(host) requires forward secrecy "
                + "(NSExceptionRequiresForwardSecrecy=NO would allow it)"
        case .forwardSecrecy:
            message = "\(negotiated); \(host) requires a forward-secrecy cipher suite "
                + "(NSExceptionRequiresForwardSecrecy=NO with NSExceptionAllowsInsecureHTTPLoads=YES would allow it)"
        case .forwardSecrecyOrRSA, .any:
            message = "\(negotiated); \(host) requires a forward-secrecy or TLS_RSA_WITH_AES_* cipher suite "
                + "(NSExceptionAllowsInsecureHTTPLoads=YES would allow it)"
        }
        return (.cipherSuite, message)
    }
}
